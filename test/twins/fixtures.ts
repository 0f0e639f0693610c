// Shared builders for area A tests: a KPT claim that passes every rule, household DIDs, and a
// server with keys of each kind.
import { randomBytes } from 'node:crypto';
import type { KptClaimRequest } from '../../generated/openapi/types.gen.ts';
import type { Config } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { Registry } from 'prom-client';
import { ApiKeyService, type Scope } from '../../src/platform/keys/service.ts';
import { createLogger } from '../../src/platform/logging.ts';
import { createTwinsArea, type TwinsArea } from '../../src/twins/index.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

export const PARTNER_DID = 'did:ixo:entity:0000000000000000000000000000aaaa';
export const OTHER_DID = 'did:ixo:entity:0000000000000000000000000000bbbb';

export const householdDid = () => `did:ixo:entity:${randomBytes(16).toString('hex')}`;

/** A claim that passes all eight rules once an aligned claim of the other group exists. */
export function kptClaim(overrides: Partial<KptClaimRequest> = {}): KptClaimRequest {
  return {
    type: 'KPTClaim',
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

export async function startTwinsHarness(db: Db, env: Record<string, string> = {}): Promise<TwinsHarness> {
  const server = await startTestServer(db, env);
  const all: Scope[] = ['twins:read', 'twins:write', 'claims:read', 'claims:write'];
  return {
    server,
    key: await createTestKey(db, { principalDid: PARTNER_DID, scopes: all }),
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
  for (const table of ['twin_entities', 'twin_relationships', 'kpt_collections', 'kpt_claims', 'kpt_idempotency_keys', 'twins_idempotency_keys', 'twin_evidence_blobs', 'twin_credential_status_events']) {
    const rows: Record<string, unknown>[] = await db(table);
    out[table] = rows.map((r) => JSON.stringify(r, Object.keys(r).sort())).sort();
  }
  return out;
}

/** Area A's services in-process (as the USSD gateway uses them), closed (its sealer thread too) after `fn`. */
export async function withTwinsArea<T>(config: Config, db: Db, fn: (area: TwinsArea) => Promise<T>): Promise<T> {
  const closers: (() => unknown)[] = [];
  const area = await createTwinsArea({ config, db, logger: createLogger(config), keys: new ApiKeyService(db), metrics: new Registry(), onClose: (close) => closers.push(close) });
  try {
    return await fn(area);
  } finally {
    for (const close of closers) await close();
  }
}
