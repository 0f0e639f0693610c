// Area A benchmarks. POST /v1/claims: every request is a new household's claim (never an
// identical resubmission): an intervention claim in a collection that already holds an aligned
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

/** The collection with its aligned reference claim; returns the id of a verified claim. */
const prepareCollection = oncePerDatabase(async (target) => {
  await post(target, '/v1/collections', { id: COLLECTION, name: 'Benchmark' });
  await post(target, '/v1/claims', claimBody('reference', `did:ixo:entity:${randomBytes(16).toString('hex')}`));
  const verified = await post(target, '/v1/claims', claimBody('intervention', `did:ixo:entity:${randomBytes(16).toString('hex')}`));
  if (verified.status !== 'verified') throw new Error(`bench claim is ${verified.status}`);
  return verified.id as string;
});

/** How many reference claims the large collection holds before its row is measured. */
const LARGE_GROUP = 2000;
const LARGE_COLLECTION = `${COLLECTION}-large`;

/** The large collection, its reference group filled (20 claims at a time). */
const prepareLargeCollection = oncePerDatabase(async (target) => {
  await post(target, '/v1/collections', { id: LARGE_COLLECTION, name: 'Benchmark, large' });
  const prefix = randomBytes(8).toString('hex');
  for (let i = 0; i < LARGE_GROUP; i += 20) {
    await Promise.all(
      Array.from({ length: 20 }, (_, j) =>
        post(target, '/v1/claims', { ...claimBody('reference', `did:ixo:entity:${prefix}${(i + j).toString(16).padStart(16, '0')}`), collectionId: LARGE_COLLECTION }),
      ),
    );
  }
});

/** A collection of its own for each database: its pending claims are this row's alone. */
const preparePendingCollection = oncePerDatabase(async (target) => {
  const id = `${COLLECTION}-pending`;
  await post(target, '/v1/collections', { id, name: 'Benchmark, pending' });
  return id;
});

/** Autocannon options posting a new household's claim of `group` to `collectionId` each request. */
function newClaims(target: BenchTarget, collectionId: string, group: 'reference' | 'intervention' = 'intervention'): Partial<autocannon.Options> {
  const prefix = randomBytes(8).toString('hex');
  let n = 0;
  return {
    url: target.baseUrl,
    requests: [
      {
        method: 'POST',
        path: '/v1/claims',
        headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ ...claimBody(group, `did:ixo:entity:${prefix}${(n++).toString(16).padStart(16, '0')}`), collectionId }),
        }),
      },
    ],
  };
}

export const cases: BenchCase[] = [
  {
    name: 'POST /v1/claims (new verified claim)',
    async prepare(target) {
      await prepareCollection(target);
      return newClaims(target, COLLECTION);
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
      await prepareLargeCollection(target);
      return newClaims(target, LARGE_COLLECTION);
    },
  },
  {
    name: 'GET /v1/claims/{id}',
    targetRatio: 0.25,
    targetP99Ms: 50,
    async prepare(target) {
      const id = await prepareCollection(target);
      return { url: `${target.baseUrl}/v1/claims/${id}`, headers: { authorization: `Bearer ${target.key}` } };
    },
  },
];
