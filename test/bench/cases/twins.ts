// Area A benchmarks. POST /v1/claims: every request is a new household's claim (never an
// identical resubmission), a household of a full-population campaign's census (so KPT rule 5
// holds): an intervention claim in a collection that already holds an aligned
// reference claim, so each one is validated, stored, verified and signed; or a reference claim in
// a collection with no intervention claim, so each one is stored pending and then reconciled
// as a programme's first claims are. GET /v1/claims/{id}: one verified claim.
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import type { BenchCase, BenchTarget } from '../case.ts';

const COLLECTION = `bench-${randomBytes(4).toString('hex')}`;

const claimBody = (group: 'reference' | 'intervention', household: string) => ({
  type: 'KPTClaim',
  collectionId: COLLECTION,
  householdId: household,
  testGroup: group,
  fuelMeasurements: { total: 7.5, dailyLogs: [2.5, 2.4, 2.6] },
  testPeriod: { startDate: '2026-03-02', endDate: '2026-03-04', durationDays: 3 },
  evidence: [{ type: 'selection-methodology', uri: 'https://example.org/kpt/selection.pdf' }],
  externalFactors: { season: 'long-rains', culturalEvents: ['none'], occupationalFactors: ['farming'] },
});

async function post(target: BenchTarget, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${target.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** `prepare` run once per database: instances sharing one share what it stored. */
function oncePerDatabase<T>(prepare: (target: BenchTarget) => Promise<T>): (target: BenchTarget) => Promise<T> {
  const done = new Map<string, Promise<T>>();
  return (target) => {
    let result = done.get(target.database);
    if (!result) done.set(target.database, (result = prepare(target)));
    return result;
  };
}

/**
 * How many households a collection's census lists: every claim a row sends is a new household
 * of it (KPT rule 5 holds for a household in the frame of a full-population campaign), for every
 * row sharing the collection on a database.
 */
const FRAME_SIZE = 40_000;
/** Households a census draw lists, under the default BODY_LIMIT. */
const CENSUS_CHUNK = 1000;
const CENSUS_DESIGN = { type: 'full-population', frame: 'The benchmark households', procedure: 'Every household of the frame is in the campaign' };

/** A full-population campaign whose census lists FRAME_SIZE households; `next` gives each once. */
interface Campaign {
  id: string;
  next(): string;
}

async function createCampaign(target: BenchTarget, id: string, name: string): Promise<Campaign> {
  await post(target, '/v1/collections', { id, name, selectionDesign: CENSUS_DESIGN });
  const prefix = randomBytes(8).toString('hex');
  const household = (n: number) => `did:ixo:entity:${prefix}${n.toString(16).padStart(16, '0')}`;
  for (let i = 0; i < FRAME_SIZE; i += CENSUS_CHUNK) {
    await post(target, `/v1/collections/${id}/draws`, { frame: Array.from({ length: CENSUS_CHUNK }, (_, j) => ({ household: household(i + j) })) });
  }
  let n = 0;
  return {
    id,
    next() {
      // A household outside the frame would fail rule 5: the row would time another path.
      if (n === FRAME_SIZE) throw new Error(`campaign ${id}: its ${FRAME_SIZE} households are used up; make FRAME_SIZE larger`);
      return household(n++);
    },
  };
}

/** The campaign with its aligned reference claim, and the id of a verified claim. */
const prepareCollection = oncePerDatabase(async (target) => {
  const campaign = await createCampaign(target, COLLECTION, 'Benchmark');
  await post(target, '/v1/claims', claimBody('reference', campaign.next()));
  const verified = await post(target, '/v1/claims', claimBody('intervention', campaign.next()));
  if (verified.status !== 'verified') throw new Error(`bench claim is ${verified.status}: ${JSON.stringify(verified.reasons)}`);
  return { campaign, verifiedId: verified.id as string };
});

/** How many reference claims the large collection holds before its row is measured. */
const LARGE_GROUP = 2000;

/** The large campaign, its reference group filled (20 claims at a time). */
const prepareLargeCollection = oncePerDatabase(async (target) => {
  const campaign = await createCampaign(target, `${COLLECTION}-large`, 'Benchmark, large');
  for (let i = 0; i < LARGE_GROUP; i += 20) {
    await Promise.all(Array.from({ length: 20 }, () => post(target, '/v1/claims', { ...claimBody('reference', campaign.next()), collectionId: campaign.id })));
  }
  return campaign;
});

/** A campaign of its own for each database: its pending claims are this row's alone. */
const preparePendingCollection = oncePerDatabase((target) => createCampaign(target, `${COLLECTION}-pending`, 'Benchmark, pending'));

/** Autocannon options posting a claim of `group` for the campaign's next household each request. */
function newClaims(target: BenchTarget, campaign: Campaign, group: 'reference' | 'intervention' = 'intervention'): Partial<autocannon.Options> {
  return {
    url: target.baseUrl,
    requests: [
      {
        method: 'POST',
        path: '/v1/claims',
        headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ ...claimBody(group, campaign.next()), collectionId: campaign.id }) }),
      },
    ],
  };
}

export const cases: BenchCase[] = [
  {
    name: 'POST /v1/claims (new verified claim)',
    async prepare(target) {
      return newClaims(target, (await prepareCollection(target)).campaign);
    },
  },
  {
    name: 'POST /v1/claims (new pending claim)',
    async prepare(target) {
      return newClaims(target, await preparePendingCollection(target), 'reference');
    },
  },
  {
    // What a claim costs once its collection is large: its rules look at the other group's claims.
    name: `POST /v1/claims (new verified claim, ${LARGE_GROUP.toLocaleString('en')} reference claims)`,
    async prepare(target) {
      return newClaims(target, await prepareLargeCollection(target));
    },
  },
  {
    name: 'GET /v1/claims/{id}',
    targetRatio: 0.25,
    targetP99Ms: 50,
    async prepare(target) {
      const { verifiedId } = await prepareCollection(target);
      return { url: `${target.baseUrl}/v1/claims/${verifiedId}`, headers: { authorization: `Bearer ${target.key}` } };
    },
  },
];
