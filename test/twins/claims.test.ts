// POST/GET /v1/claims through the generated SDK: status codes, the eight KPT rules, pending ->
// verified, idempotency and concurrency, on SQLite and PostgreSQL.
import { expect } from 'chai';
import { changeCredentialStatus, createCollection, createDraw, createEntity, getClaim, getCollection, getCollectionReport, listClaims, submitClaim, updateCollection, verifyCredential } from '../../generated/openapi/sdk.gen.ts';
import type { CollectionCreateRequest, KptClaim, KptClaimRequest, Problem } from '../../generated/openapi/types.gen.ts';
import { rowsOf, type Db } from '../../src/platform/db/index.ts';
import { inTransaction, type Sql } from '../../src/platform/db/sql.ts';
import { conflictWith, DomainError } from '../../src/platform/domain-errors.ts';
import { toAppError } from '../../src/platform/http/errors.ts';
import type { Principal } from '../../src/platform/keys/service.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase, untilRows } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';
import { encodeCursor } from '../../src/twins/paging.ts';
import { ClaimSealer } from '../../src/twins/claims/claim-sealer.ts';
import { CAMPAIGN_ID, CENSUS_DESIGN, createFramedCollection, householdDid, kptClaim, OTHER_DID, PARTNER_DID, startTwinsHarness, twinsTableContents, unframedHouseholdDid, withTwinsArea, type TwinsHarness } from './fixtures.ts';

/** The PostgreSQL backend a connection (held by a transaction) runs on. */
const backendPid = async (db: Db) => (await rowsOf<{ pid: number }>(db.raw('select pg_backend_pid() as pid')))[0]!.pid;

const claimsOfHousehold = async (db: Db, household: string) =>
  Number(((await db('kpt_claims').where('household_did', household).count({ n: '*' }).first()) as { n: number | string }).n);

forEachDatabase('KPT claims', (t) => {
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  const submit = async (body: unknown, opts: { key?: string; idempotencyKey?: string; server?: TestServer } = {}) => {
    const res = await submitClaim({
      client: (opts.server ?? h.server).client,
      auth: opts.key ?? h.key,
      body: body as KptClaimRequest,
      ...(opts.idempotencyKey ? { headers: { 'Idempotency-Key': opts.idempotencyKey } } : {}),
    });
    const status = res.response.status;
    const payload = (res.data ?? res.error) as unknown;
    expectContractResponse('post', '/v1/claims', { status, headers: res.response.headers, body: payload });
    return { status, headers: res.response.headers, claim: payload as KptClaim, problem: payload as Problem };
  };

  /** Submits a request that must fail, and asserts nothing was stored. */
  const rejected = async (body: unknown, status: number, opts: { key?: string; idempotencyKey?: string } = {}) => {
    const before = await twinsTableContents(t.db);
    const res = await submit(body, opts);
    expect(res.status, JSON.stringify(res.problem)).to.equal(status);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(await twinsTableContents(t.db)).to.deep.equal(before);
    return res.problem;
  };

  const pair = async (overrides: Partial<KptClaimRequest> = {}) => {
    const ref = await submit(kptClaim({ testGroup: 'reference', ...overrides }));
    const int = await submit(kptClaim({ testGroup: 'intervention', ...overrides }));
    return { ref, int };
  };

  describe('status codes', () => {
    it('201 with Location for a new claim; GET returns it', async () => {
      const res = await submit(kptClaim({ collectionId: 'default' }));
      expect(res.status).to.equal(201);
      expect(res.headers.get('location')).to.equal(`/v1/claims/${res.claim.id}`);
      expect(res.claim.id).to.match(/^kpt_[0-9a-f]{32}$/);
      const got = await getClaim({ client: h.server.client, auth: h.key, path: { id: res.claim.id } });
      expectContractResponse('get', '/v1/claims/{id}', { status: 200, headers: got.response.headers, body: got.data });
      expect(got.data).to.deep.equal(res.claim);
    });

    it('a claim is answered as the JSON text a serialiser writes, its stored credential spliced in once, with and without one and every optional member', async () => {
      const raw = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
        const res = await fetch(`${h.server.baseUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${h.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        const text = await res.text();
        expect(res.headers.get('content-type'), text).to.equal('application/json; charset=utf-8');
        return { status: res.status, text };
      };
      const collectionId = 'json-text';
      await createFramedCollection(h.server, h.key, { id: collectionId, name: 'JSON text' });
      // Rule 4 fails: rejected, without a credential.
      const first = await raw('POST', '/v1/claims', kptClaim({ collectionId, externalFactors: { culturalEvents: ['none'], occupationalFactors: ['farming'] } }));
      const rejectedClaim = JSON.parse(first.text) as KptClaim;
      expect(rejectedClaim.status).to.equal('rejected');
      const original = await submit(kptClaim({ collectionId }));
      await submit(kptClaim({ collectionId, testGroup: 'intervention' }));
      const correction = await raw('POST', '/v1/claims', {
        ...kptClaim({ collectionId, householdId: original.claim.householdId, fuelMeasurements: { total: 7.6, dailyLogs: [2.6, 2.4, 2.6] } }),
        corrects: original.claim.id,
        cookingSessions: [{ date: '2026-03-02', startedAt: '2026-03-02T07:30:00Z', durationMinutes: 40, fuelKg: 2.6, meal: 'ugali', peopleServed: 5 }],
      });
      const corrected = JSON.parse(correction.text) as KptClaim;
      expect(corrected).to.deep.include({ status: 'verified', corrects: original.claim.id });
      expect(corrected.cookingSessions).to.have.length(1);
      for (const [answer, claim] of [[first, rejectedClaim], [correction, corrected]] as const) {
        expectContractResponse('post', '/v1/claims', { status: answer.status, headers: new Headers({ 'content-type': 'application/json' }), body: claim });
        expect(answer.text).to.equal(JSON.stringify(claim));
        const got = await raw('GET', `/v1/claims/${claim.id}`);
        expect(got.status).to.equal(200);
        expect(got.text).to.equal(answer.text);
        for (const member of ['"credential":', '"verifiableCredential":', '"checks":', '"reasons":']) {
          expect(got.text.split(member).length - 1, member).to.equal(claim.status === 'verified' || !member.includes('redential') ? 1 : 0);
        }
      }
    });

    it('a claim that completes pending claims of the other group verifies each of them', async () => {
      const collectionId = `completing-${Date.now()}`;
      await createFramedCollection(h.server, h.key, { id: collectionId, name: 'Completing' });
      const pending: string[] = [];
      for (let i = 0; i < 30; i++) pending.push((await submit(kptClaim({ collectionId }))).claim.id);
      const res = await submit(kptClaim({ collectionId, testGroup: 'intervention' }));
      expect(res.claim.status).to.equal('verified');
      for (const id of pending) {
        const now = (await getClaim({ client: h.server.client, auth: h.key, path: { id } })).data!;
        expect(now.status, id).to.equal('verified');
        expect(now.credential!.evidence[0]).to.equal(`ipfs://${now.claimCid}`);
      }
    });

    it('200 with the stored claim for an identical resubmission, storing nothing new', async () => {
      const body = kptClaim();
      const first = await submit(body);
      const before = await twinsTableContents(t.db);
      const again = await submit(body);
      expect(again.status).to.equal(200);
      expect(again.claim).to.deep.equal(first.claim);
      expect(again.headers.get('location')).to.equal(`/v1/claims/${first.claim.id}`);
      // Only the Idempotency-Key the SDK sent is new, bound to the stored claim for its retries.
      const { kpt_idempotency_keys: keysBefore, ...restBefore } = before;
      const { kpt_idempotency_keys: keysAfter, ...restAfter } = await twinsTableContents(t.db);
      expect(restAfter).to.deep.equal(restBefore);
      const added = keysAfter!.filter((k) => !keysBefore!.includes(k)).map((k) => JSON.parse(k as string) as { claim_id: string; response_status: number });
      expect(added.map((k) => [k.claim_id, k.response_status])).to.deep.equal([[first.claim.id, 200]]);
    });

    it('401 with WWW-Authenticate without a key, 403 for a key without claims:write', async () => {
      const res = await fetch(`${h.server.baseUrl}/v1/claims`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(kptClaim()) });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
      await rejected(kptClaim(), 401, { key: 'hth_not-a-key' });
      const p = await rejected(kptClaim(), 403, { key: h.readOnlyKey });
      expect(p.detail).to.match(/claims:write/);
    });

    it('400 naming field and rule for bodies that are not KPT claims, storing nothing', async () => {
      const cases: [unknown, string, string][] = [
        [{ ...kptClaim(), type: 'Claim' }, '/body/type', 'const'],
        [(({ householdId: _h, ...rest }) => rest)(kptClaim()), '/body/householdId', 'required'],
        [kptClaim({ testGroup: 'control' as never }), '/body/testGroup', 'enum'],
        [kptClaim({ fuelMeasurements: { total: 'seven' as never, dailyLogs: [2.5, 2.4, 2.6] } }), '/body/fuelMeasurements/total', 'type'],
        [kptClaim({ testPeriod: { startDate: '2026-02-30', endDate: '2026-03-04' } }), '/body/testPeriod/startDate', 'format'],
        [kptClaim({ evidence: [{ type: 'photo', uri: 'http://insecure.example/p.jpg' }] }), '/body/evidence/0/uri', 'pattern'],
        [{ ...kptClaim(), stove: 'x' }, '/body/stove', 'additionalProperties'],
      ];
      for (const [body, pointer, rule] of cases) {
        const p = await rejected(body, 400);
        expect(p.errors, JSON.stringify(p)).to.deep.include.members([{ pointer, message: p.errors!.find((e) => e.pointer === pointer)?.message ?? '', rule }]);
      }
    });

    it('400 for a DID URL as householdId, saying it is a DID URL', async () => {
      const p = await rejected(kptClaim({ householdId: 'did:ixo:household/123' }), 400);
      expect(p.errors).to.deep.equal([{ pointer: '/body/householdId', message: p.errors![0]!.message, rule: 'did-syntax' }]);
      expect(p.errors![0]!.message).to.match(/DID URL/);
    });

    it('400 for an evidence address that is not a URL: signed into the credential as an evidence id, it would never verify', async () => {
      for (const uri of ['https://[::1/', 'https://exa%20mple.org/', 'https://user@:80/', 'https://a:99999/']) {
        const p = await rejected(kptClaim({ evidence: [{ type: 'photo', uri: 'https://example.org/p.jpg' }, { type: 'photo', uri }] }), 400);
        expect(p.errors, uri).to.deep.equal([{ pointer: '/body/evidence/1/uri', message: 'must be a URL (WHATWG URL: a host, port and escapes that parse)', rule: 'url' }]);
      }
      // URLs the parser reads as another URL (RFC 3986 tools refuse them or read them otherwise): one spelling per evidence id.
      for (const uri of ['https://\\example.org/p.jpg', 'https://0x7f.1/p.jpg', 'https://user@example.org/p.jpg', 'https://example.org:443/p.jpg']) {
        const p = await rejected(kptClaim({ evidence: [{ type: 'photo', uri }] }), 400);
        expect(p.errors![0], uri).to.include({ pointer: '/body/evidence/0/uri', rule: 'url' });
      }
      expect((await submit(kptClaim({ evidence: [{ type: 'photo', uri: 'https://Example.org:8443/p.jpg' }] }))).status).to.equal(201);
    });

    it('400 for an ipfs:// evidence address that names no CID, storing nothing; a CID with a path is one', async () => {
      const before = await twinsTableContents(t.db);
      for (const uri of ['ipfs://notacid', 'ipfs://bafy', 'ipfs:///bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi']) {
        const p = await rejected(kptClaim({ evidence: [{ type: 'photo', uri: 'https://example.org/p.jpg' }, { type: 'photo', uri }] }), 400);
        expect(p.errors, uri).to.deep.equal([{ pointer: '/body/evidence/1/uri', message: 'must name a CID after ipfs:// (ipfs://<cid> or ipfs://<cid>/<path>)', rule: 'ipfs-cid' }]);
      }
      expect(await twinsTableContents(t.db)).to.deep.equal(before);
      for (const uri of ['ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/photos/1.jpg', 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi']) {
        expect((await submit(kptClaim({ evidence: [{ type: 'photo', uri }] }))).status, uri).to.equal(201);
      }
    });

    it('400 for an unknown collection', async () => {
      const p = await rejected(kptClaim({ collectionId: 'no-such-campaign' }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/collectionId', rule: 'collection-exists' });
    });

    if (t.kind === 'postgres') {
      it('a claim waits for a controller transfer in flight and is judged against the new controller', async () => {
        const household = (await createEntity({ client: h.server.client, auth: h.key, body: { type: 'Household', properties: {} } })).data!.did;
        const transfer = await t.db.transaction();
        let pending: ReturnType<typeof submit> | undefined;
        try {
          await transfer('twin_entities').update({ controller: OTHER_DID }).where('did', household);
          const transferPid = await backendPid(transfer);
          pending = submit(kptClaim({ householdId: household }));
          // The submission must be blocked by this transfer, not merely slow (nor waiting on
          // someone else's lock in the same database), before the transfer commits.
          const waiting = await untilRows(t.db, pending, 'select pid from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [transferPid]);
          expect(waiting, 'a submission waiting on the household row').to.not.have.length(0);
        } finally {
          await transfer.commit();
        }
        const res = await pending;
        expect(res.status).to.equal(403);
      });
    }

    it('an unknown collection is a 400 even when the measurements also conflict', async () => {
      const p = await rejected(kptClaim({ collectionId: 'no-such-campaign', fuelMeasurements: { total: 9, dailyLogs: [2, 2, 2] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/collectionId', rule: 'collection-exists' });
    });

    it('403 when the household is a registered entity the caller does not control; its controller may submit', async () => {
      const created = await createEntity({ client: h.server.client, auth: h.otherKey, body: { type: 'Household', properties: {} } });
      const household = created.data!.did;
      expect(created.data!.controller).to.equal(OTHER_DID);
      const p = await rejected(kptClaim({ householdId: household }), 403);
      expect(p.detail).to.match(/controller/);
      // Before any 409: a caller who may not submit for the household learns nothing of its data.
      await rejected(kptClaim({ householdId: household, fuelMeasurements: { total: 9, dailyLogs: [2, 2, 2] } }), 403);
      expect((await submit(kptClaim({ householdId: household }), { key: h.otherKey })).status).to.equal(201);
    });
  });

  it('400 for a household filter that is not a DID', async () => {
    const res = await fetch(`${h.server.baseUrl}/v1/claims?household=notadid`, { headers: { authorization: `Bearer ${h.key}` } });
    expect(res.status).to.equal(400);
    expect((await res.json()).errors[0]).to.include({ pointer: '/query/household', rule: 'did-syntax' });
  });

  describe('rule 1: at least 3 days', () => {
    it('400 with fewer than 3 daily logs', async () => {
      const p = await rejected(kptClaim({ fuelMeasurements: { total: 5, dailyLogs: [2.5, 2.5] }, testPeriod: undefined }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/dailyLogs', rule: 'minItems' });
    });
    it('accepts exactly 3 days and reports the rule as passed', async () => {
      const res = await submit(kptClaim());
      expect(res.claim.checks.find((c) => c.rule === 'min-duration')).to.include({ number: 1, outcome: 'passed' });
    });
  });

  describe('rule 2: total equals the sum of dailyLogs', () => {
    it('409 when total and the logs differ beyond the tolerance', async () => {
      const p = await rejected(kptClaim({ fuelMeasurements: { total: 7.52, dailyLogs: [2.5, 2.4, 2.6] } }), 409);
      expect(p.errors).to.have.length(1);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/total', rule: 'total-matches-logs' });
    });
    it('accepts float sums by tolerance (0.1 + 0.2 + 0.3 = 0.6) and differences within 0.01 kg', async () => {
      expect(0.1 + 0.2 + 0.3).not.to.equal(0.6);
      const a = await submit(kptClaim({ fuelMeasurements: { total: 0.6, dailyLogs: [0.1, 0.2, 0.3] } }));
      expect(a.status).to.equal(201);
      const b = await submit(kptClaim({ fuelMeasurements: { total: 7.505, dailyLogs: [2.5, 2.4, 2.6] } }));
      expect(b.status).to.equal(201);
    });
  });

  describe('KPT_TOTAL_TOLERANCE_KG', () => {
    it('sets the allowed difference between total and the sum of dailyLogs', async () => {
      const lenient = await startTestServer(t.db, { KPT_TOTAL_TOLERANCE_KG: '0.1' });
      try {
        const body = kptClaim({ fuelMeasurements: { total: 7.55, dailyLogs: [2.5, 2.4, 2.6] } });
        expect((await submit(body)).status).to.equal(409);
        expect((await submit(body, { server: lenient })).status).to.equal(201);
        expect((await submit(kptClaim({ fuelMeasurements: { total: 7.65, dailyLogs: [2.5, 2.4, 2.6] } }), { server: lenient })).status).to.equal(409);
      } finally {
        await lenient.stop();
      }
    });
  });

  describe('JSON types', () => {
    it('400 for numbers sent as strings: bodies are not coerced', async () => {
      const p = await rejected({ ...kptClaim(), fuelMeasurements: { total: '7.5', dailyLogs: [2.5, 2.4, 2.6] } }, 400);
      expect(p.errors!.map((e) => e.pointer)).to.include('/body/fuelMeasurements/total');
    });
  });

  describe('measurement bounds', () => {
    it('400 for daily logs over 1000 kg (sums that overflow can never pass rule 2)', async () => {
      const p = await rejected(kptClaim({ fuelMeasurements: { total: 5, dailyLogs: [1e308, 1e308, 1e308] } }), 400);
      expect(p.errors!.map((e) => e.pointer)).to.include('/body/fuelMeasurements/dailyLogs/0');
    });
  });

  describe('rule 3: values are positive numbers', () => {
    it('400 for a zero or negative daily log, and for a non-positive total', async () => {
      let p = await rejected(kptClaim({ fuelMeasurements: { total: 5, dailyLogs: [2.5, 0, 2.5] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/dailyLogs/1', rule: 'minimum' });
      p = await rejected(kptClaim({ fuelMeasurements: { total: 2.5, dailyLogs: [2.5, -1, 1] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/dailyLogs/1', rule: 'minimum' });
      p = await rejected(kptClaim({ fuelMeasurements: { total: 0, dailyLogs: [2.5, 2.4, 2.6] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/total', rule: 'minimum' });
    });

    it('a claim stored before the 1 g floor is still answered within the contract (stored values are positive)', async () => {
      const res = await submit(kptClaim({ householdId: 'did:ixo:entity:00000000000000000000000000000f01' }));
      const row = (await t.db('kpt_claims').first('body').where('id', res.claim.id)) as { body: string };
      const legacy = { ...(JSON.parse(row.body) as KptClaimRequest), fuelMeasurements: { total: 0.0015, dailyLogs: [0.0005, 0.0005, 0.0005], unit: 'kg' as const } };
      await t.db('kpt_claims').update({ body: JSON.stringify(legacy), total_kg: 0.0015, daily_logs: '[0.0005,0.0005,0.0005]' }).where('id', res.claim.id);
      const got = await getClaim({ client: h.server.client, auth: h.key, path: { id: res.claim.id } });
      expect(got.data!.fuelMeasurements).to.deep.equal({ total: 0.0015, dailyLogs: [0.0005, 0.0005, 0.0005], unit: 'kg' });
      expectContractResponse('get', '/v1/claims/{id}', { status: 200, headers: got.response.headers, body: got.data });
    });

    it('a reading is at least 1 g (0.001 kg), and a total at least 3 of them: 1e-300 kg is no weighing', async () => {
      let p = await rejected(kptClaim({ fuelMeasurements: { total: 5, dailyLogs: [2.5, 1e-300, 2.5] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/dailyLogs/1', rule: 'minimum' });
      p = await rejected(kptClaim({ fuelMeasurements: { total: 0.003, dailyLogs: [0.0009, 0.0011, 0.001] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/dailyLogs/0', rule: 'minimum' });
      p = await rejected(kptClaim({ fuelMeasurements: { total: 0.0029, dailyLogs: [0.001, 0.001, 0.001] } }), 400);
      expect(p.errors![0]).to.include({ pointer: '/body/fuelMeasurements/total', rule: 'minimum' });
      const least = await submit(kptClaim({ fuelMeasurements: { total: 0.003, dailyLogs: [0.001, 0.001, 0.001] } }));
      expect(least.status).to.equal(201);
    });
  });

  describe('rule 4: seasonal variations documented', () => {
    it('rejects a claim without externalFactors.season, with the reason', async () => {
      const res = await submit(kptClaim({ externalFactors: { culturalEvents: ['none'], occupationalFactors: ['none'] } }));
      expect(res.status).to.equal(201);
      expect(res.claim.status).to.equal('rejected');
      expect(res.claim.reasons.map((r) => r.rule)).to.include('seasonal-variations-documented');
      expect(res.claim.checks.find((c) => c.rule === 'seasonal-variations-documented')).to.include({ number: 4, outcome: 'failed' });
      expect(res.claim).not.to.have.property('credential');
    });
  });

  describe('rule 5: random selection verified', () => {
    const rule5 = (claim: KptClaim) => claim.checks.find((c) => c.rule === 'random-selection-verified')!;

    it('a collection declaring no design passes it for no claim: selection evidence on the claim and a selectionMethod are documentation, not proof', async () => {
      const col = await createCollection({ client: h.server.client, auth: h.key, body: { id: 'rule5-undeclared', name: 'Rule 5', selectionMethod: 'Random draw from the programme register' } });
      expect(col.response.status).to.equal(201);
      for (const collectionId of ['rule5-undeclared', undefined]) {
        const res = await submit(kptClaim({ collectionId }));
        expect(res.claim.status).to.equal('rejected');
        expect(res.claim.reasons).to.deep.equal([{ rule: 'random-selection-verified', message: 'the collection declares no selection design (selectionDesign), so no household of it is shown to be randomly selected' }]);
      }
    });

    it('a full-population campaign passes it for the households its census lists, and for no other', async () => {
      const { ref, int } = await pair({ evidence: undefined });
      expect(rule5(ref.claim)).to.include({ outcome: 'passed' });
      expect(rule5(ref.claim).message).to.match(/^the household was listed in census drw_[0-9a-f]{32} of this full-population campaign$/);
      expect(int.claim.status).to.equal('verified');
      expect(int.claim.verifiableCredential!.credentialSubject).to.include({ selectionDesign: 'full-population', selectionFrame: 'The households of the test frame' });
      expect(int.claim.verifiableCredential!.credentialSubject.selectionDraw).to.match(new RegExp(`/v1/collections/${CAMPAIGN_ID}/draws/drw_[0-9a-f]{32}$`));
      const outside = await submit(kptClaim({ householdId: unframedHouseholdDid(), testGroup: 'intervention' }));
      expect(outside.claim.status).to.equal('rejected');
      expect(outside.claim.reasons).to.deep.equal([{ rule: 'random-selection-verified', message: 'the household is not among the households drawn for this campaign (POST /v1/collections/{id}/draws)' }]);
      expect(outside.claim).not.to.have.property('verifiableCredential');
    });

    it('a self-selected campaign stores its claims, never passes them, and its report counts them apart', async () => {
      const design = { type: 'self-selected', frame: 'Whoever dials in', procedure: 'Households enrol themselves' } as const;
      expect((await createCollection({ client: h.server.client, auth: h.key, body: { id: 'rule5-self', name: 'Self', selectionDesign: design } })).response.status).to.equal(201);
      const { ref, int } = await pair({ collectionId: 'rule5-self' });
      for (const res of [ref, int]) {
        expect([res.status, res.claim.status]).to.deep.equal([201, 'rejected']);
        expect(res.claim.reasons).to.deep.equal([{ rule: 'random-selection-verified', message: 'the campaign is self-selected (households enrolled themselves): not a random sample, so its claims are kept apart and never pass this rule' }]);
      }
      const report = (await getCollectionReport({ client: h.server.client, auth: h.key, path: { id: 'rule5-self' } })).data!;
      expect(report.selection).to.deep.equal({ design: { ...design, frameSource: 'draws' }, draws: [], claimsHeldApart: 2 });
      expect(report.claimsCounted).to.equal(0);
      const draw = await createDraw({ client: h.server.client, auth: h.key, path: { id: 'rule5-self' }, body: { frame: [{ household: householdDid() }] } });
      expect(draw.response.status).to.equal(409);
    });

    it('a design is declared once: PATCH declares it for a collection that has none, 409 for one that has; a design must fit its type', async () => {
      await createCollection({ client: h.server.client, auth: h.key, body: { id: 'rule5-later', name: 'Later' } });
      const patch = (body: Record<string, unknown>) => updateCollection({ client: h.server.client, auth: h.key, path: { id: 'rule5-later' }, body });
      const declared = await patch({ selectionDesign: CENSUS_DESIGN });
      expect(declared.response.status).to.equal(200);
      expect(declared.data!.selectionDesign).to.deep.equal({ ...CENSUS_DESIGN, frameSource: 'draws' });
      const again = await patch({ selectionDesign: { ...CENSUS_DESIGN, type: 'simple-random' } });
      expect(again.response.status).to.equal(409);
      expect((again.error as Problem).errors).to.deep.equal([{ pointer: '/body/selectionDesign', message: 'is declared already', rule: 'design-declared-once' }]);
      expect((await getCollection({ client: h.server.client, auth: h.key, path: { id: 'rule5-later' } })).data!.selectionDesign).to.deep.equal({ ...CENSUS_DESIGN, frameSource: 'draws' });
      const misfit = async (design: Record<string, unknown>, rule: string) => {
        const res = await createCollection({ client: h.server.client, auth: h.key, body: { id: `misfit-${rule}`, name: 'Misfit', selectionDesign: design as never } });
        expect(res.response.status).to.equal(400);
        expect((res.error as Problem).errors!.map((e) => e.rule)).to.deep.equal([rule]);
      };
      await misfit({ ...CENSUS_DESIGN, type: 'stratified-random' }, 'design-strata');
      await misfit({ ...CENSUS_DESIGN, strata: ['a', 'b'] }, 'design-strata');
      await misfit({ ...CENSUS_DESIGN, type: 'simple-random', frameSource: 'registered-households' }, 'design-frame-source');
    });
  });

  describe('who may submit into a collection', () => {
    const collection = async (body: Record<string, unknown>, key = h.key) => {
      const res = await createCollection({ client: h.server.client, auth: key, body: body as never });
      expectContractResponse('post', '/v1/collections', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
      return res;
    };
    /** A collection whose households (householdDid's) pass rule 5. */
    const framed = async (body: CollectionCreateRequest) => {
      const res = await createFramedCollection(h.server, h.key, body);
      expectContractResponse('post', '/v1/collections', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
      return res;
    };

    it("403 for a key of another principal: a partner's counterpart claims cannot verify the campaign's claims", async () => {
      const created = await framed({ id: 'closed-campaign', name: 'Closed', selectionMethod: 'Random draw' });
      expect(created.data).to.deep.include({ createdBy: PARTNER_DID, submitters: [], openToAll: false });
      const ref = await submit(kptClaim({ collectionId: 'closed-campaign', testGroup: 'reference' }));
      expect(ref.claim.status).to.equal('pending');
      const p = await rejected(kptClaim({ collectionId: 'closed-campaign', testGroup: 'intervention', householdId: 'did:ixo:entity:00000000000000000000000000000b01' }), 403, { key: h.otherKey });
      expect(p.detail).to.equal(`Collection closed-campaign takes claims from its creator and its submitters only; ${OTHER_DID} is neither.`);
      expect((await getClaim({ client: h.server.client, auth: h.key, path: { id: ref.claim.id } })).data!.status).to.equal('pending');
    });

    it('a principal the creator names in submitters may submit, and so may every key into an open collection', async () => {
      await framed({ id: 'shared-campaign', name: 'Shared', selectionMethod: 'Random draw', submitters: [OTHER_DID] });
      const { ref } = await pair({ collectionId: 'shared-campaign' });
      const int = await submit(kptClaim({ collectionId: 'shared-campaign', testGroup: 'intervention' }), { key: h.otherKey });
      expect([ref.status, int.status, int.claim.status]).to.deep.equal([201, 201, 'verified']);
      const open = await collection({ id: 'open-campaign', name: 'Open', selectionMethod: 'Random draw', openToAll: true });
      expect(open.data).to.deep.include({ submitters: [], openToAll: true });
      expect((await submit(kptClaim({ collectionId: 'open-campaign' }), { key: h.otherKey })).status).to.equal(201);
    });

    it("its creator changes who may submit (PATCH), and no one else may; default and ussd are the service's", async () => {
      await collection({ id: 'growing-campaign', name: 'Growing', selectionMethod: 'Random draw' });
      const partnerHousehold = 'did:ixo:entity:00000000000000000000000000000b04';
      await rejected(kptClaim({ collectionId: 'growing-campaign', householdId: partnerHousehold }), 403, { key: h.otherKey });
      const patch = async (id: string, body: Record<string, unknown>, key = h.key) => {
        const res = await updateCollection({ client: h.server.client, auth: key, path: { id }, body: body });
        expectContractResponse('patch', '/v1/collections/{id}', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
        return res;
      };
      const added = await patch('growing-campaign', { submitters: [OTHER_DID] });
      expect(added.response.status).to.equal(200);
      expect(added.data).to.deep.include({ id: 'growing-campaign', submitters: [OTHER_DID], openToAll: false, selectionMethod: 'Random draw' });
      expect((await submit(kptClaim({ collectionId: 'growing-campaign', householdId: partnerHousehold }), { key: h.otherKey })).status).to.equal(201);
      // Another principal may not change it, even one it names.
      expect((await patch('growing-campaign', { submitters: [] }, h.otherKey)).response.status).to.equal(403);
      expect((await patch('default', { openToAll: false })).response.status).to.equal(403);
      expect((await patch('ussd', { submitters: [PARTNER_DID] })).response.status).to.equal(403);
      expect((await patch('no-such-campaign', { openToAll: true })).response.status).to.equal(404);
      // Open with submitters says two things; an empty change says nothing.
      expect((await patch('growing-campaign', { openToAll: true })).response.status).to.equal(400);
      expect((await patch('growing-campaign', {})).response.status).to.equal(400);
      const opened = await patch('growing-campaign', { openToAll: true, submitters: [] });
      expect(opened.data).to.deep.include({ submitters: [], openToAll: true });
      const closed = await patch('growing-campaign', { openToAll: false });
      expect(closed.data).to.deep.include({ submitters: [], openToAll: false });
      await rejected(kptClaim({ collectionId: 'growing-campaign', householdId: partnerHousehold, fuelMeasurements: { total: 9, dailyLogs: [3, 3, 3] } }), 403, { key: h.otherKey });
    });

    it('`default` (claims naming no collection) is open to every key; a collection is open or has submitters, not both', async () => {
      const res = await submit(kptClaim({ collectionId: undefined, householdId: 'did:ixo:entity:00000000000000000000000000000b03' }), { key: h.otherKey });
      expect(res.status).to.equal(201);
      const got = await getCollection({ client: h.server.client, auth: h.key, path: { id: 'default' } });
      expect(got.data).to.deep.include({ openToAll: true, submitters: [] });
      const both = await collection({ id: 'both', name: 'Both', openToAll: true, submitters: [OTHER_DID] });
      expect(both.response.status).to.equal(400);
      expect((both.error as Problem).errors).to.deep.equal([{ pointer: '/body/submitters', message: 'names submitters of a collection open to every key (openToAll); leave one of them out', rule: 'open-or-submitters' }]);
      const notDid = await collection({ id: 'not-did', name: 'Not a DID', submitters: ['field-agent'] });
      expect(notDid.response.status).to.equal(400);
      const twice = await collection({ id: 'twice', name: 'Twice', submitters: [OTHER_DID, OTHER_DID] });
      expect(twice.response.status).to.equal(400);
      expect(await getCollection({ client: h.server.client, auth: h.key, path: { id: 'both' } }).then((r) => r.response.status)).to.equal(404);
    });
  });

  describe('rules 6 and 7: control group present, timing aligned; pending -> verified', () => {
    it('a claim whose credential is revoked or suspended is withdrawn data: it makes no control group present', async () => {
      await createFramedCollection(h.server, h.key, { id: 'withdrawn-control', name: 'Withdrawn control' });
      const { ref, int } = await pair({ collectionId: 'withdrawn-control' });
      expect([ref.claim.status, int.claim.status]).to.deep.equal(['pending', 'verified']);
      const revoker = await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000dddd', scopes: ['credentials:revoke'] });
      const change = async (id: string, action: 'revoke' | 'suspend' | 'reinstate') =>
        (await changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id }, body: { action, reason: 'scale found faulty' } })).response.status;
      // The reference claim is verified by now (the intervention claim's arrival reconciled it).
      expect((await getClaim({ client: h.server.client, auth: h.key, path: { id: ref.claim.id } })).data!.status).to.equal('verified');
      expect(await change(ref.claim.id, 'suspend')).to.equal(200);
      const next = await submit(kptClaim({ collectionId: 'withdrawn-control', testGroup: 'intervention' }));
      expect(next.claim.status).to.equal('pending');
      expect(next.claim.checks.find((c) => c.rule === 'control-group-present')).to.include({ outcome: 'waiting' });
      expect(await change(ref.claim.id, 'reinstate')).to.equal(200);
      expect((await submit(kptClaim({ collectionId: 'withdrawn-control', testGroup: 'intervention' }))).claim.status).to.equal('verified');
      expect(await change(ref.claim.id, 'revoke')).to.equal(200);
      expect((await submit(kptClaim({ collectionId: 'withdrawn-control', testGroup: 'intervention' }))).claim.status).to.equal('pending');
    });

    it("a claim whose group last found the other group empty is sealed without a credential; if verified after all, it is signed in its transaction", async () => {
      const collectionId = 'first-claims';
      await createFramedCollection(h.server, h.key, { id: collectionId, name: 'First claims' });
      // The credentials signed ahead, by claim id, of the claims of this collection.
      const signedAhead = new Map<string, boolean>();
      const seal = Object.getOwnPropertyDescriptor(ClaimSealer.prototype, 'seal')!;
      ClaimSealer.prototype.seal = function (input) {
        if (input.claim.collectionId === collectionId) signedAhead.set(input.id, input.withCredential);
        return (seal.value as ClaimSealer['seal']).call(this, input);
      };
      try {
        const first = await submit(kptClaim({ collectionId }));
        const second = await submit(kptClaim({ collectionId }));
        expect([first.claim.status, second.claim.status]).to.deep.equal(['pending', 'pending']);
        const partner = await submit(kptClaim({ collectionId, testGroup: 'intervention' }));
        // The reference group was last seen without partners: this one was expected to end pending.
        const late = await submit(kptClaim({ collectionId }));
        const after = await submit(kptClaim({ collectionId }));
        expect([partner.claim.status, late.claim.status, after.claim.status]).to.deep.equal(['verified', 'verified', 'verified']);
        expect([first, second, partner, late, after].map((c) => signedAhead.get(c.claim.id))).to.deep.equal([true, false, true, false, true]);
        for (const { claim } of [first, second, late]) {
          const now = (await getClaim({ client: h.server.client, auth: h.key, path: { id: claim.id } })).data!;
          expect(now.status).to.equal('verified');
          const verified = await verifyCredential({ client: h.server.client, body: { verifiableCredential: now.verifiableCredential as unknown as Record<string, unknown> } });
          expect(verified.data, JSON.stringify(verified.error)).to.deep.include({ verified: true });
          expect(now.verifiableCredential!.credentialSubject).to.deep.include({ claimId: claim.id });
        }
      } finally {
        Object.defineProperty(ClaimSealer.prototype, 'seal', seal);
      }
    });

    it('a claim reads its collection once, in its transaction, when an earlier submission read it: its credential is signed ahead by that', async () => {
      const collectionId = 'collection-read-once';
      await createFramedCollection(h.server, h.key, { id: collectionId, name: 'Read once' });
      await submit(kptClaim({ collectionId }));
      const reads: string[] = [];
      const onQuery = (q: { sql: string }) => {
        if (/from [`"]kpt_collections[`"]/.test(q.sql)) reads.push(q.sql);
      };
      t.db.on('query', onQuery);
      try {
        const partner = await submit(kptClaim({ collectionId, testGroup: 'intervention' }));
        expect(partner.claim.status).to.equal('verified');
        const verified = await verifyCredential({ client: h.server.client, body: { verifiableCredential: partner.claim.verifiableCredential as unknown as Record<string, unknown> } });
        expect(verified.data, JSON.stringify(verified.error)).to.deep.include({ verified: true });
      } finally {
        t.db.off('query', onQuery);
      }
      expect(reads).to.have.length(1);
    });

    it('keeps a claim pending until an aligned claim of the other group arrives, then verifies both in that request', async () => {
      await createFramedCollection(h.server, h.key, { id: 'pairing', name: 'Pairing' });
      const ref = await submit(kptClaim({ collectionId: 'pairing' }));
      expect(ref.claim.status).to.equal('pending');
      expect(ref.claim.reasons.map((r) => r.rule)).to.deep.equal(['control-group-present', 'timing-aligned']);
      expect(ref.claim.checks.find((c) => c.rule === 'control-group-present')).to.include({ number: 6, outcome: 'waiting' });

      // Another reference household does not help: same group.
      const ref2 = await submit(kptClaim({ collectionId: 'pairing' }));
      expect(ref2.claim.status).to.equal('pending');

      const int = await submit(kptClaim({ collectionId: 'pairing', testGroup: 'intervention', testPeriod: { startDate: '2026-03-03', endDate: '2026-03-05' } }));
      expect(int.status).to.equal(201);
      expect(int.claim.status).to.equal('verified');
      for (const id of [ref.claim.id, ref2.claim.id]) {
        const now = (await getClaim({ client: h.server.client, auth: h.key, path: { id } })).data!;
        expect(now.status).to.equal('verified');
        expect(now.reasons).to.deep.equal([]);
        expect(now.verifiedAt).to.be.a('string');
        expect(now.credential!.evidence[0]).to.equal(`ipfs://${now.claimCid}`);
      }
    });

    it('a claim of the other group that does not overlap leaves it pending on timing only', async () => {
      await createFramedCollection(h.server, h.key, { id: 'misaligned', name: 'Misaligned' });
      await submit(kptClaim({ collectionId: 'misaligned' }));
      const late = await submit(kptClaim({ collectionId: 'misaligned', testGroup: 'intervention', testPeriod: { startDate: '2026-06-01', endDate: '2026-06-03' } }));
      expect(late.claim.status).to.equal('pending');
      expect(late.claim.checks.find((c) => c.rule === 'control-group-present')!.outcome).to.equal('passed');
      expect(late.claim.checks.find((c) => c.rule === 'timing-aligned')).to.include({ number: 7, outcome: 'waiting' });
    });

    it('rejects a claim without testPeriod (timing cannot be aligned); a rejected claim verifies nobody', async () => {
      await createFramedCollection(h.server, h.key, { id: 'no-period', name: 'No period' });
      const ref = await submit(kptClaim({ collectionId: 'no-period' }));
      const int = await submit(kptClaim({ collectionId: 'no-period', testGroup: 'intervention', testPeriod: undefined }));
      expect(int.claim.status).to.equal('rejected');
      expect(int.claim.reasons.map((r) => r.rule)).to.include('timing-aligned');
      const after = (await getClaim({ client: h.server.client, auth: h.key, path: { id: ref.claim.id } })).data!;
      expect(after.status).to.equal('pending');
    });
  });

  describe('rule 8: external factors documented', () => {
    it('rejects a claim without cultural or occupational factors', async () => {
      const res = await submit(kptClaim({ externalFactors: { season: 'dry' } }));
      expect(res.claim.status).to.equal('rejected');
      const reason = res.claim.reasons.find((r) => r.rule === 'external-factors-documented')!;
      expect(reason.message).to.match(/culturalEvents, occupationalFactors/);
    });
  });

  describe('409 conflicting measurement data', () => {
    it('test period against daily logs: length, durationDays, order', async () => {
      let p = await rejected(kptClaim({ testPeriod: { startDate: '2026-03-02', endDate: '2026-03-05' } }), 409);
      expect(p.errors![0]).to.include({ pointer: '/body/testPeriod', rule: 'test-period-matches-logs' });
      p = await rejected(kptClaim({ testPeriod: { startDate: '2026-03-02', endDate: '2026-03-04', durationDays: 4 } }), 409);
      expect(p.errors![0]).to.include({ pointer: '/body/testPeriod/durationDays', rule: 'duration-matches-logs' });
      p = await rejected(kptClaim({ testPeriod: { startDate: '2026-03-04', endDate: '2026-03-02' } }), 409);
      expect(p.errors![0]).to.include({ pointer: '/body/testPeriod/endDate', rule: 'test-period-order' });
    });

    it('an overlapping claim of the same household with other values', async () => {
      const household = householdDid();
      await submit(kptClaim({ householdId: household }));
      const p = await rejected(
        kptClaim({ householdId: household, fuelMeasurements: { total: 9, dailyLogs: [3, 3, 3] }, testPeriod: { startDate: '2026-03-04', endDate: '2026-03-06' } }),
        409,
      );
      expect(p.errors![0]).to.include({ pointer: '/body/testPeriod', rule: 'no-overlapping-claim' });
      // A later, non-overlapping period of the same household is fine.
      const later = await submit(kptClaim({ householdId: household, testPeriod: { startDate: '2026-04-01', endDate: '2026-04-03' } }));
      expect(later.status).to.equal(201);
    });

    it('the same household in both groups of a collection', async () => {
      const household = householdDid();
      await submit(kptClaim({ householdId: household, testGroup: 'reference' }));
      const p = await rejected(kptClaim({ householdId: household, testGroup: 'intervention', testPeriod: { startDate: '2026-05-01', endDate: '2026-05-03' } }), 409);
      expect(p.errors![0]).to.include({ pointer: '/body/testGroup', rule: 'household-single-group' });
    });

    it('a rejected claim does not place the household in its group: the group can be corrected', async () => {
      const household = householdDid();
      const wrong = await submit(kptClaim({ householdId: household, testGroup: 'reference', externalFactors: { season: 'dry' } }));
      expect(wrong.claim.status).to.equal('rejected');
      const corrected = await submit(kptClaim({ householdId: household, testGroup: 'intervention', testPeriod: { startDate: '2026-05-01', endDate: '2026-05-03' } }));
      expect(corrected.status).to.equal(201);
    });

    it('a rejected claim may be corrected with the same measurements and more documentation', async () => {
      const body = kptClaim({ externalFactors: { season: 'dry' } });
      const first = await submit(body);
      expect(first.claim.status).to.equal('rejected');
      // The same rejected claim with its fields in another order is still the same claim.
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      const same = await submit(reordered);
      expect(same.status).to.equal(200);
      expect(same.claim.id).to.equal(first.claim.id);
      const fixed = await submit({ ...body, externalFactors: { season: 'dry', culturalEvents: ['none'], occupationalFactors: ['none'] } });
      expect(fixed.status).to.equal(201);
      expect(fixed.claim.id).not.to.equal(first.claim.id);
      expect(fixed.claim.status).not.to.equal('rejected');
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first result for the same key and body', async () => {
      const body = kptClaim();
      const first = await submit(body, { idempotencyKey: 'req-0001' });
      expect(first.status).to.equal(201);
      const again = await submit(body, { idempotencyKey: 'req-0001' });
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.claim).to.deep.equal(first.claim);
    });

    it('422 when the key is reused with another body; keys are per caller', async () => {
      await submit(kptClaim(), { idempotencyKey: 'req-0002' });
      const p = await rejected(kptClaim(), 422, { idempotencyKey: 'req-0002' });
      expect(p.errors![0]).to.include({ pointer: '/headers/idempotency-key', rule: 'idempotency-key-reuse' });
      expect((await submit(kptClaim(), { idempotencyKey: 'req-0002', key: h.otherKey })).status).to.equal(201);
    });

    it('409 for a key reused with a body that differs only outside the measurements; nothing of it is stored', async () => {
      const body = kptClaim();
      const first = await submit(body, { idempotencyKey: 'req-0004' });
      expect(first.status).to.equal(201);
      const other = { ...body, externalFactors: { ...body.externalFactors!, season: 'a different season' } };
      const p = await rejected(other, 422, { idempotencyKey: 'req-0004' });
      expect(p.errors![0]).to.include({ pointer: '/headers/idempotency-key', rule: 'idempotency-key-reuse' });
      // The same body in another member order is the same request.
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      const again = await submit(reordered, { idempotencyKey: 'req-0004' });
      expect(again.status).to.equal(201);
      expect(again.claim).to.deep.equal(first.claim);
    });

    it('a retry gets its first result even after that rejected claim was corrected by another request', async () => {
      const body = kptClaim({ externalFactors: { season: 'dry' } });
      const first = await submit(body, { idempotencyKey: 'req-0005' });
      expect(first.claim.status).to.equal('rejected');
      const fixed = await submit({ ...body, externalFactors: { season: 'dry', culturalEvents: ['none'], occupationalFactors: ['none'] } }, { idempotencyKey: 'req-0006' });
      expect(fixed.status).to.equal(201);
      const retry = await submit(body, { idempotencyKey: 'req-0005' });
      expect(retry.status).to.equal(201);
      expect(retry.claim).to.deep.equal(first.claim);
      expect(retry.claim.status).to.equal('rejected');
    });

    it('a key first sent with a resubmission is bound to the stored claim it answered with', async () => {
      const x = kptClaim();
      const created = await submit(x);
      expect(created.status).to.equal(201);
      const replay = await submit(x, { idempotencyKey: 'req-0003' });
      expect(replay.status).to.equal(200);
      expect(replay.claim.id).to.equal(created.claim.id);
      // The key now names that claim: another body with it is refused and stores nothing...
      const p = await rejected(kptClaim(), 422, { idempotencyKey: 'req-0003' });
      expect(p.errors![0]).to.include({ rule: 'idempotency-key-reuse' });
      // ...and the first body with it is still answered with the same claim.
      const again = await submit(x, { idempotencyKey: 'req-0003' });
      expect([again.status, again.headers.get('idempotent-replayed')]).to.deep.equal([200, 'true']);
      expect(again.claim.id).to.equal(created.claim.id);
    });
  });

  describe('concurrency', () => {
    // PostgreSQL: the requests are spread over two app instances on the database.
    const instances = t.kind === 'postgres' ? ' (two instances)' : ' (one instance)';
    it(`50 concurrent identical submissions store one claim${instances}`, async () => {
      const second = t.kind === 'postgres' ? await startTestServer(t.open()) : undefined;
      try {
        const body = kptClaim();
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) => submit(body, { server: second && i % 2 ? second : h.server })),
        );
        expect(results.filter((r) => r.status === 201)).to.have.length(1);
        expect(results.filter((r) => r.status === 200)).to.have.length(49);
        expect(new Set(results.map((r) => r.claim.id)).size).to.equal(1);
        expect(await claimsOfHousehold(t.db, body.householdId)).to.equal(1);
      } finally {
        await second?.stop();
      }
    });

    it(`a mixed burst (good claims of both groups, refusals, a household in both groups, resubmissions, keys reused) gets each its own answer, no 5xx, every good claim stored once and verified${instances}`, async () => {
      const collectionId = 'burst';
      await createFramedCollection(h.server, h.key, { id: collectionId, name: 'Burst' });
      const owned = (await createEntity({ client: h.server.client, auth: h.key, body: { type: 'Household', properties: {} } })).data!.did;
      const second = t.kind === 'postgres' ? await startTestServer(t.open()) : undefined;
      const claim = (householdId: string, testGroup: 'reference' | 'intervention', extra: Partial<KptClaimRequest> = {}) => kptClaim({ collectionId, householdId, testGroup, ...extra });
      type Job = { name: string; body: unknown; key?: string; idempotencyKey?: string; expect: number[]; group?: string };
      const jobs: Job[] = [];
      for (let k = 0; k < 20; k++) jobs.push({ name: `ref${k}`, body: claim(householdDid(), 'reference'), expect: [201] });
      for (let k = 0; k < 20; k++) jobs.push({ name: `int${k}`, body: claim(householdDid(), 'intervention'), expect: [201] });
      for (let k = 0; k < 3; k++) jobs.push({ name: `bad${k}`, body: { ...claim(householdDid(), 'reference'), type: 'Nope' }, expect: [400] });
      for (let k = 0; k < 3; k++) jobs.push({ name: `forbidden${k}`, body: claim(owned, 'reference'), key: h.otherKey, expect: [403] });
      for (let k = 0; k < 3; k++) jobs.push({ name: `conflict${k}`, body: claim(householdDid(), 'reference', { fuelMeasurements: { total: 9, dailyLogs: [1, 1, 1] } }), expect: [409] });
      for (let k = 0; k < 3; k++) {
        const household = householdDid();
        for (const group of ['reference', 'intervention'] as const) jobs.push({ name: `both${k}${group}`, group: `both${k}`, body: claim(household, group), expect: [201, 409] });
      }
      for (let k = 0; k < 2; k++) {
        const body = claim(householdDid(), 'reference');
        for (let j = 0; j < 3; j++) jobs.push({ name: `same${k}.${j}`, group: `same${k}`, body, expect: [201, 200] });
      }
      for (let k = 0; k < 2; k++) {
        const body = claim(householdDid(), 'intervention');
        for (let j = 0; j < 3; j++) jobs.push({ name: `key${k}.${j}`, group: `key${k}`, body, idempotencyKey: `burst-key-${k}`, expect: [201] });
        for (let j = 0; j < 2; j++) jobs.push({ name: `keyOther${k}.${j}`, group: `keyOther${k}`, body: claim(householdDid(), 'intervention'), idempotencyKey: `burst-other-${k}`, expect: [201, 422] });
      }
      try {
        const results = await Promise.all(jobs.map((j, n) => submit(j.body, { key: j.key, idempotencyKey: j.idempotencyKey, server: second && n % 2 ? second : h.server })));
        jobs.forEach((j, n) => expect(j.expect, `${j.name}: ${results[n]!.status} ${JSON.stringify(results[n]!.problem)}`).to.include(results[n]!.status));
        const groups = new Map<string, number[]>();
        jobs.forEach((j, n) => j.group && groups.set(j.group, [...(groups.get(j.group) ?? []), n]));
        for (const [group, members] of groups) {
          // A replay of the creation answers 201 too, marked.
          const statuses = members.map((n) => `${results[n]!.status}${results[n]!.headers.get('idempotent-replayed') ? '*' : ''}`);
          expect(statuses.filter((st) => st === '201'), `${group}: ${statuses.join(',')}`).to.have.length(1);
          if (!group.startsWith('both') && !group.startsWith('keyOther')) expect(new Set(members.map((n) => results[n]!.claim.id)).size, group).to.equal(1);
        }
        const created = results.filter((r) => r.status === 201 && !r.headers.get('idempotent-replayed')).length;
        const stored = await listClaims({ client: h.server.client, auth: h.key, query: { collection: collectionId, limit: 100 } });
        expect(stored.data!.items).to.have.length(created);
        expect(stored.data!.items.every((c) => c.status === 'verified'), JSON.stringify(stored.data!.items.map((c) => c.reasons))).to.equal(true);
      } finally {
        await second?.stop();
      }
    });

    it(`a reference and an intervention claim arriving at once both end verified${instances}`, async () => {
      // Each pair is alone in its collection, so neither claim can be repaired by a later one.
      const pairs = Array.from({ length: 15 }, (_, i) => `pair-${i}`);
      for (const id of pairs) await createFramedCollection(h.server, h.key, { id, name: id });
      const second = t.kind === 'postgres' ? await startTestServer(t.open()) : undefined;
      try {
        await Promise.all(
          pairs.flatMap((collectionId) => [
            submit(kptClaim({ collectionId, testGroup: 'reference' })),
            submit(kptClaim({ collectionId, testGroup: 'intervention' }), { server: second }),
          ]),
        );
        for (const collection of pairs) {
          const stored = await listClaims({ client: h.server.client, auth: h.key, query: { collection } });
          expect(stored.data!.items.map((c) => c.status), collection).to.deep.equal(['verified', 'verified']);
        }
      } finally {
        await second?.stop();
      }
    });

    it(`a correction of a pending claim and a claim of the other group arriving at once: both stored, both end verified${instances}`, async () => {
      // The correction changes the pending claim while the other claim may re-evaluate it.
      const second = t.kind === 'postgres' ? await startTestServer(t.open()) : undefined;
      try {
        for (let round = 0; round < 10; round++) {
          const collectionId = `correct-race-${round}`;
          await createFramedCollection(h.server, h.key, { id: collectionId, name: collectionId });
          const household = householdDid();
          const pending = await submit(kptClaim({ collectionId, householdId: household, testGroup: 'reference' }));
          expect(pending.claim.status).to.equal('pending');
          const results = await Promise.all([
            submit(kptClaim({ collectionId, householdId: household, testGroup: 'reference', corrects: pending.claim.id, fuelMeasurements: { total: 9, dailyLogs: [3, 3, 3] } })),
            submit(kptClaim({ collectionId, testGroup: 'intervention' }), { server: second }),
          ]);
          expect(results.map((r) => r.status), `round ${round}`).to.deep.equal([201, 201]);
          const stored = await listClaims({ client: h.server.client, auth: h.key, query: { collection: collectionId } });
          expect(stored.data!.items.map((c) => c.status).sort(), `round ${round}`).to.deep.equal(['rejected', 'verified', 'verified']);
        }
      } finally {
        await second?.stop();
      }
    });

    it(`contradictory claims for one household sent at once to two collections: one is stored, the other is 409${instances}`, async () => {
      const second = t.kind === 'postgres' ? await startTestServer(t.open()) : undefined;
      try {
        for (let round = 0; round < 10; round++) {
          const collections = [`race-a-${round}`, `race-b-${round}`];
          for (const id of collections) await createFramedCollection(h.server, h.key, { id, name: id });
          const household = householdDid();
          const results = await Promise.all([
            submit(kptClaim({ collectionId: collections[0], householdId: household })),
            submit(kptClaim({ collectionId: collections[1], householdId: household, fuelMeasurements: { total: 9, dailyLogs: [3, 3, 3] } }), { server: second }),
          ]);
          expect(results.map((r) => r.status).sort(), `round ${round}`).to.deep.equal([201, 409]);
          expect(results.find((r) => r.status === 409)!.problem.errors![0]).to.include({ pointer: '/body/testPeriod', rule: 'no-overlapping-claim' });
          expect(await claimsOfHousehold(t.db, household)).to.equal(1);
        }
      } finally {
        await second?.stop();
      }
    });

    it(`a reference and an intervention claim arriving at once at one instance both end verified`, async () => {
      const pairs = Array.from({ length: 10 }, (_, i) => `shared-pair-${i}`);
      for (const id of pairs) await createFramedCollection(h.server, h.key, { id, name: id });
      const results = await Promise.all(pairs.flatMap((collectionId) => [submit(kptClaim({ collectionId, testGroup: 'reference' })), submit(kptClaim({ collectionId, testGroup: 'intervention' }))]));
      expect(results.map((r) => r.status)).to.deep.equal(results.map(() => 201));
      for (const collection of pairs) {
        const stored = await listClaims({ client: h.server.client, auth: h.key, query: { collection } });
        expect(stored.data!.items.map((c) => c.status), collection).to.deep.equal(['verified', 'verified']);
      }
    });

    it('refusals arriving with good claims at one instance fail alone: the good claims are stored once', async () => {
      const owned = (await createEntity({ client: h.server.client, auth: h.key, body: { type: 'Household', properties: {} } })).data!.did;
      const results = await Promise.all([
        ...Array.from({ length: 6 }, () => submit(kptClaim())),
        submit(kptClaim({ collectionId: 'no-such-collection' })),
        submit(kptClaim({ householdId: owned }), { key: h.otherKey }),
        submit(kptClaim({ fuelMeasurements: { total: 9, dailyLogs: [1, 1, 1] } })),
      ]);
      expect(results.map((r) => r.status)).to.deep.equal([201, 201, 201, 201, 201, 201, 400, 403, 409]);
    });

    it(`claims for the same households sent at once to two instances in opposite orders: each stored once, resubmissions answered with it${instances}`, async () => {
      // On PostgreSQL each instance may put both in one shared transaction. Started in the order of
      // their households, both take the household locks in one order; were the database to end one
      // of them for a deadlock all the same, its claims would run again alone.
      const second = t.kind === 'postgres' ? await startTestServer(t.open()) : undefined;
      try {
        for (let round = 0; round < 3; round++) {
          const bodies = [kptClaim(), kptClaim()];
          const results = await Promise.all([
            submit(bodies[0]), submit(bodies[1]),
            submit(bodies[1], { server: second }), submit(bodies[0], { server: second }),
          ]);
          expect(results.map((r) => r.status).sort(), `round ${round}`).to.deep.equal([200, 200, 201, 201]);
          expect(results[0].claim.id).to.equal(results[3].claim.id);
          expect(results[1].claim.id).to.equal(results[2].claim.id);
          for (const body of bodies) expect(await claimsOfHousehold(t.db, body.householdId)).to.equal(1);
        }
      } finally {
        await second?.stop();
      }
    });

    // PostgreSQL: a claim is held in flight after it counted the other group and stored itself,
    // by a test transaction holding its Idempotency-Key uncommitted (the claim waits to bind it).
    if (t.kind === 'postgres') {
      /** Backends waiting for a lock `pid` holds, once there is one; none if `request` (the one that should wait) answers first. */
      const blockedBy = async (pid: number, request: Promise<unknown>): Promise<number[]> =>
        (await untilRows<{ pid: number }>(t.db, request, 'select pid from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [pid])).map((r) => r.pid);
      /** Submits a claim and holds it in flight until `release`; `pid` is the backend running it. */
      const submitHeld = async (body: KptClaimRequest, idempotencyKey: string) => {
        const anyClaim = (await t.db<{ id: string }>('kpt_claims').first('id'))!.id;
        const hold = await t.db.transaction();
        await hold('kpt_idempotency_keys').insert({ principal_did: PARTNER_DID, idempotency_key: idempotencyKey, claim_id: anyClaim, request_hash: 'held', created_at: new Date().toISOString() });
        const holder = await backendPid(hold);
        const result = submit(body, { idempotencyKey });
        const [pid] = await blockedBy(holder, result);
        return { result, pid, release: () => hold.rollback() };
      };

      it('a claim of the other group that counts while a claim is in flight (both see none): both end verified', async () => {
        const collectionId = `skew-${householdDid().slice(-8)}`;
        await createFramedCollection(h.server, h.key, { id: collectionId, name: collectionId });
        await submit(kptClaim());
        const ref = await submitHeld(kptClaim({ collectionId, testGroup: 'reference' }), 'skew-ref');
        let int: ReturnType<typeof submit> | undefined;
        try {
          expect(ref.pid, 'the reference claim is held after storing itself').to.be.a('number');
          // It counts no reference claim (the held one is not committed), and must not finish
          // pending before the reference claim commits.
          int = submit(kptClaim({ collectionId, testGroup: 'intervention' }));
          expect(await blockedBy(ref.pid!, int), 'the intervention claim waits for the reference claim in flight').to.have.length(1);
        } finally {
          await ref.release();
        }
        expect((await Promise.all([ref.result, int])).map((r) => r.status)).to.deep.equal([201, 201]);
        const stored = await listClaims({ client: h.server.client, auth: h.key, query: { collection: collectionId } });
        expect(stored.data!.items.map((c) => c.status)).to.deep.equal(['verified', 'verified']);
      });

      it('claims of one group in one collection do not wait for each other, pending or verified', async () => {
        const collectionId = `same-group-${householdDid().slice(-8)}`;
        await createFramedCollection(h.server, h.key, { id: collectionId, name: collectionId });
        await submit(kptClaim());
        for (const verified of [false, true]) {
          if (verified) await submit(kptClaim({ collectionId, testGroup: 'intervention' }));
          const held = await submitHeld(kptClaim({ collectionId, testGroup: 'reference' }), `same-group-${verified}`);
          try {
            expect(held.pid, 'the first claim is held after storing itself').to.be.a('number');
            const second = await submit(kptClaim({ collectionId, testGroup: 'reference' }));
            expect([second.status, second.claim.status], 'stored while the first is in flight').to.deep.equal([201, verified ? 'verified' : 'pending']);
          } finally {
            await held.release();
          }
          expect((await held.result).status).to.equal(201);
        }
      });

      it('reconciles of pending claims wait neither for each other nor hold up submissions; a correction waits for them', async () => {
        const collectionId = `reconcile-${householdDid().slice(-8)}`;
        await createFramedCollection(h.server, h.key, { id: collectionId, name: collectionId });
        await submit(kptClaim());
        // Two reconciles held mid-way: an intervention claim is in flight while a reference claim
        // is stored pending (its reconcile waits for it); once it commits, both reconciles verify
        // the reference claim, whose row a test transaction holds.
        const int = await submitHeld(kptClaim({ collectionId, testGroup: 'intervention' }), 'reconcile-int');
        const rowLock = await t.db.transaction();
        let ref: ReturnType<typeof submit> | undefined;
        let correction: ReturnType<typeof submit> | undefined;
        let released: Promise<unknown> | undefined;
        try {
          expect(int.pid, 'the intervention claim is held after storing itself').to.be.a('number');
          ref = submit(kptClaim({ collectionId, testGroup: 'reference' }));
          expect(await blockedBy(int.pid!, ref), "the reference claim's reconcile waits for the intervention claim").to.have.length(1);
          const refId = ((await t.db('kpt_claims').first('id').where({ collection_id: collectionId, test_group: 'reference' })) as { id: string }).id;
          await rowLock.raw('select id from kpt_claims where id = ? for update', [refId]);
          await (released = int.release());
          const rowHolder = await backendPid(rowLock);
          expect(await blockedBy(rowHolder, ref), 'a reconcile waits for the held row').to.not.have.length(0);
          // The statements waiting for the held row, each by its backend and its start.
          const waitingForRow = () =>
            rowsOf<{ pid: number; started: string }>(t.db.raw('select pid, query_start::text as started from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [rowHolder]));
          const heldBefore = await waitingForRow();
          // Meanwhile claims of either group are stored and answered, their reconciles too: while
          // the held reconciles' statements still wait, not once they time out (DB_QUERY_TIMEOUT_MS,
          // 3 s) and free what they hold.
          const otherPeriod = (month: string) => ({ testPeriod: { startDate: `2026-${month}-01`, endDate: `2026-${month}-03`, durationDays: 3 } });
          const refBody = kptClaim({ collectionId, testGroup: 'reference', ...otherPeriod('05') });
          const later = [await submit(refBody), await submit(kptClaim({ collectionId, testGroup: 'intervention', ...otherPeriod('07') }))];
          expect(later.map((r) => [r.status, r.claim.status])).to.deep.equal([[201, 'pending'], [201, 'pending']]);
          expect(await waitingForRow(), 'the held reconciles still wait, the same statements').to.deep.include.members(heldBefore);
          // A correction in the collection waits for the reconciles in flight.
          correction = submit({ ...refBody, corrects: later[0]!.claim.id });
          const waiting = await untilRows(t.db, correction, "select pid from pg_locks where locktype = 'advisory' and not granted");
          expect(waiting, 'the correction waits for a lock').to.have.length(1);
        } finally {
          await rowLock.rollback();
          await (released ?? int.release());
        }
        expect((await Promise.all([int.result, ref, correction])).map((r) => r.status)).to.deep.equal([201, 201, 201]);
        const stored = await listClaims({ client: h.server.client, auth: h.key, query: { collection: collectionId } });
        expect(stored.data!.items.map((c) => [c.testGroup, c.status])).to.deep.equal([
          ['intervention', 'verified'], ['reference', 'verified'], ['reference', 'rejected'], ['intervention', 'pending'], ['reference', 'pending'],
        ]);
      });
    }

    it('50 concurrent identical submissions with one Idempotency-Key store one claim', async () => {
      const body = kptClaim();
      const results = await Promise.all(Array.from({ length: 50 }, () => submit(body, { idempotencyKey: 'burst-1' })));
      expect(results.every((r) => r.status === 201)).to.equal(true);
      expect(results.filter((r) => !r.headers.get('idempotent-replayed'))).to.have.length(1);
      expect(new Set(results.map((r) => JSON.stringify(r.claim))).size).to.equal(1);
    });
  });

  describe('GET /v1/claims', () => {
    it('filters by collection, household, group and status, and pages with a cursor', async () => {
      await createFramedCollection(h.server, h.key, { id: 'listing', name: 'Listing' });
      const household = householdDid();
      await submit(kptClaim({ collectionId: 'listing', householdId: household }));
      for (let i = 0; i < 4; i++) await submit(kptClaim({ collectionId: 'listing', testGroup: 'intervention' }));
      const all = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'listing' } });
      expectContractResponse('get', '/v1/claims', { status: 200, headers: all.response.headers, body: all.data });
      expect(all.data!.items).to.have.length(5);
      expect(all.data!.items.every((c) => c.status === 'verified')).to.equal(true);

      const byHousehold = await listClaims({ client: h.server.client, auth: h.key, query: { household } });
      expect(byHousehold.data!.items.map((c) => c.householdId)).to.deep.equal([household]);
      const raw = await fetch(`${h.server.baseUrl}/v1/claims?household=${household}`, { headers: { authorization: `Bearer ${h.key}` } });
      expect(raw.status, 'an unencoded DID in the household filter').to.equal(200);
      expect((await raw.json()).items.map((c: KptClaim) => c.householdId)).to.deep.equal([household]);
      const byGroup = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'listing', group: 'intervention' } });
      expect(byGroup.data!.items).to.have.length(4);
      const byStatus = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'listing', status: 'pending' } });
      expect(byStatus.data!.items).to.have.length(0);

      const page1 = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'listing', limit: 2 } });
      expect(page1.data!.items).to.have.length(2);
      const page2 = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'listing', limit: 2, cursor: page1.data!.nextCursor } });
      const page3 = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'listing', limit: 2, cursor: page2.data!.nextCursor } });
      expect(page3.data!.nextCursor).to.equal(undefined);
      const ids = [...page1.data!.items, ...page2.data!.items, ...page3.data!.items].map((c) => c.id);
      expect(ids).to.deep.equal(all.data!.items.map((c) => c.id));
    });

    it('updatedSince keeps the claims stored, verified or whose credential changed at or after an instant, in any time zone', async () => {
      await createFramedCollection(h.server, h.key, { id: 'since', name: 'Since' });
      const { ref, int } = await pair({ collectionId: 'since' });
      // The pair's last change is dated back: the claims a partner polled before.
      await t.db('kpt_claims').whereIn('id', [ref.claim.id, int.claim.id]).update({ updated_at: '2026-01-01T00:00:00.000Z' });
      const fresh = await submit(kptClaim({ collectionId: 'since', testGroup: 'intervention' }));
      const since = async (updatedSince: string) => {
        const res = await listClaims({ client: h.server.client, auth: h.key, query: { collection: 'since', updatedSince } });
        expectContractResponse('get', '/v1/claims', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
        return res.data!.items.map((c) => c.id);
      };
      expect(await since('2026-06-01T00:00:00Z')).to.deep.equal([fresh.claim.id]);
      expect(await since('2026-01-01T03:00:00+03:00'), 'inclusive, and the offset taken into account').to.have.members([ref.claim.id, int.claim.id, fresh.claim.id]);
      expect(await since('2026-01-01T03:00:00.001+03:00')).to.deep.equal([fresh.claim.id]);

      const revoker = await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000eeee', scopes: ['credentials:revoke'] });
      const revoked = await changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id: int.claim.id }, body: { action: 'revoke', reason: 'scale found faulty' } });
      expect(revoked.response.status).to.equal(200);
      expect(await since('2026-06-01T00:00:00Z'), 'a revoked credential changes its claim').to.deep.equal([int.claim.id, fresh.claim.id]);
      const got = await getClaim({ client: h.server.client, auth: h.key, path: { id: int.claim.id } });
      expect(got.data!.credentialState).to.equal('revoked');
      expect(got.data!.updatedAt > '2026-06-01').to.equal(true);

      for (const bad of ['yesterday', '2026-06-01', '2026-12-31T23:59:60Z']) {
        const res = await fetch(`${h.server.baseUrl}/v1/claims?updatedSince=${encodeURIComponent(bad)}`, { headers: { authorization: `Bearer ${h.key}` } });
        expect(res.status, bad).to.equal(400);
        const body = (await res.json()) as Problem;
        expectContractResponse('get', '/v1/claims', { status: 400, headers: res.headers, body });
        expect(body.errors![0], bad).to.include({ pointer: '/query/updatedSince' });
      }
    });

    it('400 for a cursor naming a position no claim has, on either database: an empty last page would read as the end of the list', async () => {
      await submit(kptClaim());
      const max = Number(((await t.db('kpt_claims').max({ m: 'seq' }).first()) as { m: number | string }).m);
      for (const seq of [0, max + 1000]) {
        const res = await listClaims({ client: h.server.client, auth: h.key, query: { cursor: encodeCursor(seq) } });
        expect(res.response.status, String(seq)).to.equal(400);
        expectContractResponse('get', '/v1/claims', { status: 400, headers: res.response.headers, body: res.error });
        expect((res.error as Problem).errors![0]).to.include({ pointer: '/query/cursor', rule: 'cursor' });
      }
      // The cursor of a page that ends the list is still an empty page.
      const last = await listClaims({ client: h.server.client, auth: h.key, query: { cursor: encodeCursor(max) } });
      expect(last.response.status).to.equal(200);
      expect(last.data!.items).to.deep.equal([]);
    });

    it('400 for a cursor it did not issue, 404 for an unknown claim, 400 for a malformed id', async () => {
      const bad = await listClaims({ client: h.server.client, auth: h.key, query: { cursor: 'bm9wZQ' } });
      expect(bad.response.status).to.equal(400);
      expect((bad.error as Problem).errors![0]).to.include({ pointer: '/query/cursor' });
      // Our shape, but beyond any sequence number (PostgreSQL's integer column would fail the query).
      const beyond = await listClaims({ client: h.server.client, auth: h.key, query: { cursor: Buffer.from('s:99999999999').toString('base64url') } });
      expect(beyond.response.status).to.equal(400);
      expect((beyond.error as Problem).errors![0]).to.include({ pointer: '/query/cursor', rule: 'cursor' });
      // An integer is written in decimal digits: the validator's Number() had read 0x10 as 16 and 1e2 as 100.
      for (const limit of ['0x10', '1e2', '%2B5', '5.0']) {
        const res = await fetch(`${h.server.baseUrl}/v1/claims?limit=${limit}`, { headers: { authorization: `Bearer ${h.key}` } });
        expect(res.status, limit).to.equal(400);
        const body = (await res.json()) as Problem;
        expectContractResponse('get', '/v1/claims', { status: 400, headers: res.headers, body });
        expect(body.errors![0], limit).to.include({ pointer: '/query/limit' });
      }
      expect((await fetch(`${h.server.baseUrl}/v1/claims?limit=16`, { headers: { authorization: `Bearer ${h.key}` } })).status).to.equal(200);
      // Our shape, but spelt another way (a leading zero, padding): not a cursor we issued.
      for (const cursor of [Buffer.from('s:01').toString('base64url'), `${Buffer.from('s:1').toString('base64url')}=`]) {
        const other = await listClaims({ client: h.server.client, auth: h.key, query: { cursor } });
        expect(other.response.status, cursor).to.equal(400);
      }
      const missing = await getClaim({ client: h.server.client, auth: h.key, path: { id: `kpt_${'0'.repeat(32)}` } });
      expect(missing.response.status).to.equal(404);
      expectContractResponse('get', '/v1/claims/{id}', { status: 404, headers: missing.response.headers, body: missing.error });
      const malformed = await getClaim({ client: h.server.client, auth: h.key, path: { id: 'nope' } });
      expect(malformed.response.status).to.equal(400);
    });
  });

  describe('ClaimService (in-process callers such as the USSD gateway)', () => {
    it('a controller submits for its households; errors are domain errors naming field and rule, rendered at the HTTP edge as 400s', () => withTwinsArea(h.server.config, t.db, async (twins) => {
      const gateway: Principal = { keyId: 'gw', did: PARTNER_DID, scopes: ['twins:write', 'claims:write'] };
      const household = await twins.entities.create(gateway, { type: 'Household', properties: {} });
      expect(household.controller).to.equal(PARTNER_DID);
      const { created, claim } = await twins.claims.submit(gateway, kptClaim({ householdId: household.did }));
      expect(created).to.equal(true);
      expect(claim.householdId).to.equal(household.did);
      let err: unknown;
      try {
        await twins.claims.submit(gateway, kptClaim({ fuelMeasurements: { total: 1, dailyLogs: [1, 1] } }));
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(DomainError);
      expect((err as DomainError).issues[0]).to.deep.include({ path: ['fuelMeasurements', 'dailyLogs'], rule: 'minItems' });
      const problem = toAppError(err);
      expect(problem.status).to.equal(400);
      expect(problem.errors![0]).to.include({ pointer: '/body/fuelMeasurements/dailyLogs', rule: 'minItems' });
      const list = await twins.claims.list({ household: household.did });
      expect(list.items.map((c) => c.id)).to.deep.equal([claim.id]);
    }));

    it("a caller's writes in the claim's unit of work (between admit and store) commit with the claim or not at all, and are made again for a claim already stored", () => withTwinsArea(h.server.config, t.db, async (twins) => {
      await t.db.schema.createTable('test_caller_writes', (table) => {
        table.string('claim_id', 64).notNullable().primary();
      });
      try {
        const gateway: Principal = { keyId: 'gw', did: PARTNER_DID, scopes: ['claims:write'] };
        const written = async () => (await t.db<{ claim_id: string }>('test_caller_writes').select('claim_id')).map((r) => r.claim_id);
        const write = (refuse: boolean) => async (trx: Sql, claimId: string) => {
          await trx('test_caller_writes').insert({ claim_id: claimId }).onConflict('claim_id').ignore();
          if (refuse) throw conflictWith('the caller refuses');
        };
        // A use case owning the claim's unit of work, as area B's claim submission does.
        const submitWith = async (body: KptClaimRequest, callerWrites: (sql: Sql, claimId: string) => Promise<void>) => {
          const { claims } = twins;
          const submission = await claims.prepare(gateway, body);
          let replay: Awaited<ReturnType<typeof claims.recover>>;
          try {
            const outcome = await inTransaction(t.db, async (sql) => {
              const admission = await claims.admit(sql, submission);
              if ('replay' in admission) return admission;
              await callerWrites(sql, submission.id);
              return { stored: await claims.store(sql, submission, admission.admitted) };
            });
            if ('stored' in outcome) return await claims.answer(outcome.stored, true);
            replay = await claims.replaying(submission, outcome.replay);
          } catch (err) {
            replay = await claims.recover(submission, err);
          }
          await inTransaction(t.db, (sql) => callerWrites(sql, replay.id));
          return claims.answer(replay, false);
        };

        const body = kptClaim();
        const before = await twinsTableContents(t.db);
        let err: unknown;
        await submitWith(body, write(true)).catch((e: unknown) => (err = e));
        expect(toAppError(err).status).to.equal(409);
        expect(await written(), 'the refused write is undone').to.deep.equal([]);
        expect(await twinsTableContents(t.db), 'and no claim stored').to.deep.equal(before);

        const { created, claim } = await submitWith(body, write(false));
        expect(created).to.equal(true);
        expect(await written()).to.deep.equal([claim.id]);

        await t.db('test_caller_writes').delete();
        const again = await submitWith(body, write(false));
        expect([again.created, again.claim.id]).to.deep.equal([false, claim.id]);
        expect(await written(), 'made again for the stored claim').to.deep.equal([claim.id]);
      } finally {
        await t.db.schema.dropTable('test_caller_writes');
      }
    }));
  });
});
