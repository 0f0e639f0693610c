// Shared builders for area A tests: a KPT claim that passes every rule, household DIDs, and a
// server with keys of each kind.
import { randomBytes } from 'node:crypto';
import type { CollectionCreateRequest, KptClaimRequest } from '../../generated/openapi/types.gen.ts';
import type { Config } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { Registry } from 'prom-client';
import { createCollection, createDraw } from '../../generated/openapi/sdk.gen.ts';
import { ApiKeyService, type Scope } from '../../src/platform/keys/service.ts';
import { createLogger } from '../../src/platform/logging.ts';
import { createTwinsArea, type TwinsArea } from '../../src/twins/index.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';
import { SlidingWindowMemoryStore } from '../../src/platform/http/sliding-window.ts';

export const PARTNER_DID = 'did:ixo:entity:0000000000000000000000000000aaaa';
export const OTHER_DID = 'did:ixo:entity:0000000000000000000000000000bbbb';

/**
 * The campaign kptClaim submits into: a full-population campaign open to every key, whose frame
 * (listed by census draws when a harness starts) is FRAME, the households householdDid gives.
 */
export const CAMPAIGN_ID = 'kpt-census';
const FRAME_SIZE = 8000;
const FRAME = Array.from({ length: FRAME_SIZE }, () => `did:ixo:entity:${randomBytes(16).toString('hex')}`);
let framed = 0;

/** A household of the campaign's frame, not given before. */
export function householdDid(): string {
  if (framed === FRAME_SIZE) throw new Error(`the test campaign's frame (${FRAME_SIZE} households) is used up: make FRAME_SIZE larger`);
  return FRAME[framed++]!;
}

/** A household in no campaign's frame: KPT rule 5 fails for it. */
export const unframedHouseholdDid = () => `did:ixo:entity:${randomBytes(16).toString('hex')}`;

/** A claim into CAMPAIGN_ID that passes all eight rules once an aligned claim of the other group exists. */
export function kptClaim(overrides: Partial<KptClaimRequest> = {}): KptClaimRequest {
  return {
    type: 'KPTClaim',
    collectionId: CAMPAIGN_ID,
    householdId: householdDid(),
    testGroup: 'reference',
    fuelMeasurements: { total: 7.5, dailyLogs: [2.5, 2.4, 2.6] },
    testPeriod: { startDate: '2026-03-02', endDate: '2026-03-04', durationDays: 3 },
    evidence: [{ type: 'selection-methodology', uri: 'https://example.org/kpt/selection.pdf' }],
    externalFactors: { season: 'long-rains', culturalEvents: ['none'], occupationalFactors: ['smallholder farming'] },
    ...overrides,
  };
}

export interface TwinsHarness {
  server: TestServer;
  /** twins:* and claims:* as PARTNER_DID. */
  key: string;
  /** Same scopes, another principal. */
  otherKey: string;
  /** Only read scopes. */
  readOnlyKey: string;
}

/** Census draws per request, under the default BODY_LIMIT. */
const CENSUS_CHUNK = 1000;

/** A full-population design whose frame is listed in census draws (the households householdDid gives). */
export const CENSUS_DESIGN = { type: 'full-population', frame: 'The households of the test frame', procedure: 'Every household of the frame is in the campaign' } as const;

/** Lists FRAME[from, to) in census draws of a full-population collection. */
async function listFrame(server: TestServer, key: string, id: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += CENSUS_CHUNK) {
    const drawn = await createDraw({ client: server.client, auth: key, path: { id }, body: { frame: FRAME.slice(i, Math.min(i + CENSUS_CHUNK, to)).map((household) => ({ household })) } });
    if (drawn.response.status !== 201) throw new Error(`census of ${id}: ${drawn.response.status} ${JSON.stringify(drawn.error)}`);
  }
}

/**
 * Creates a collection with CENSUS_DESIGN whose census lists the next CENSUS_CHUNK households
 * householdDid gives (those a test submits into it after creating it); the creation's answer.
 */
export async function createFramedCollection(server: TestServer, key: string, body: Omit<CollectionCreateRequest, 'selectionDesign'>) {
  const created = await createCollection({ client: server.client, auth: key, body: { ...body, selectionDesign: CENSUS_DESIGN } });
  if (created.response.status === 201) await listFrame(server, key, body.id, framed, Math.min(framed + CENSUS_CHUNK, FRAME_SIZE));
  return created;
}

/** Creates CAMPAIGN_ID (PARTNER_DID's, open to every key) with the frame listed. */
export async function createCensusCampaign(server: TestServer, key: string): Promise<void> {
  const created = await createCollection({ client: server.client, auth: key, body: { id: CAMPAIGN_ID, name: 'Test census', openToAll: true, selectionDesign: CENSUS_DESIGN } });
  if (created.response.status !== 201) throw new Error(`test campaign: ${created.response.status} ${JSON.stringify(created.error)}`);
  await listFrame(server, key, CAMPAIGN_ID, 0, FRAME_SIZE);
}

export async function startTwinsHarness(db: Db, env: Record<string, string> = {}): Promise<TwinsHarness> {
  const server = await startTestServer(db, env);
  const all: Scope[] = ['twins:read', 'twins:write', 'claims:read', 'claims:write'];
  const key = await createTestKey(db, { principalDid: PARTNER_DID, scopes: all });
  await createCensusCampaign(server, key);
  return {
    server,
    key,
    otherKey: await createTestKey(db, { principalDid: OTHER_DID, scopes: all }),
    readOnlyKey: await createTestKey(db, { principalDid: PARTNER_DID, scopes: ['twins:read', 'claims:read'] }),
  };
}

/**
 * The full contents of every area A table, in a stable order: a rejected request must leave
 * them all unchanged (no row added, and none updated, such as a pending claim flipped).
 */
export async function twinsTableContents(db: Db): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of ['twin_entities', 'twin_relationships', 'kpt_collections', 'kpt_claims', 'kpt_idempotency_keys', 'twins_idempotency_keys', 'twin_evidence_blobs', 'twin_credential_status_events', 'twin_events']) {
    const rows: Record<string, unknown>[] = await db(table);
    out[table] = rows.map((r) => JSON.stringify(r, Object.keys(r).sort())).sort();
  }
  return out;
}

/** Area A's services in-process (as the USSD gateway uses them), closed (its sealer thread too) after `fn`. */
export async function withTwinsArea<T>(config: Config, db: Db, fn: (area: TwinsArea) => Promise<T>): Promise<T> {
  const closers: (() => unknown)[] = [];
  const area = await createTwinsArea({ config, db, logger: createLogger(config), keys: new ApiKeyService(db), metrics: new Registry(), onClose: (close) => closers.push(close), rateLimitStores: () => new SlidingWindowMemoryStore() });
  try {
    return await fn(area);
  } finally {
    for (const close of closers) await close();
  }
}
