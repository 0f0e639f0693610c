// Bitstring Status List v1.0: credentialStatus on new credentials, the signed public status list
// credentials, the audited revoke / suspend / reinstate route, the status check of verify (and
// Digital Bazaar's whole status check agreeing), and a later correction of a claim revoking its
// credential. On SQLite and PostgreSQL.
import { expect } from 'chai';
import { Bitstring } from '@digitalbazaar/bitstring';
import {
  changeCredentialStatus,
  getClaim,
  getCredentialStatus,
  getStatusListCredential,
  submitClaim,
  verifyCredential,
} from '../../generated/openapi/sdk.gen.ts';
import type { KptClaim, KptClaimRequest, VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { signCredential } from '../../src/twins/credentials/credentials.ts';
import { loadValidatorKey } from '../../src/twins/credentials/validator-key.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey } from '../helpers/server.ts';
import { householdDid, kptClaim, PARTNER_DID, startTwinsHarness, type TwinsHarness } from './fixtures.ts';
import { independentStatusCheck, independentVerify } from './independent-verifier.ts';

const BASE = 'https://hearth.example.org';
let periods = 0;

forEachDatabase('credential status (Bitstring Status List v1.0)', (t) => {
  let h: TwinsHarness;
  let revoker: string;
  before(async () => {
    h = await startTwinsHarness(t.db, { PUBLIC_BASE_URL: BASE });
    revoker = await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000dddd', scopes: ['credentials:revoke', 'claims:read'] });
  });
  after(() => h.server.stop());

  /** A fresh household's verified intervention claim (with its reference partner), by PARTNER_DID. */
  async function verified(overrides: Partial<KptClaimRequest> = {}): Promise<KptClaim> {
    const day = 1 + (periods++ % 25);
    const start = `2027-0${1 + Math.floor(periods / 25)}-${String(day).padStart(2, '0')}`;
    const end = new Date(Date.parse(`${start}T00:00:00Z`) + 2 * 86_400_000).toISOString().slice(0, 10);
    const period = { testPeriod: { startDate: start, endDate: end } };
    await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ ...period, ...overrides }) });
    const res = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ testGroup: 'intervention', ...period, ...overrides }) });
    expect(res.data!.status).to.equal('verified');
    return res.data!;
  }

  const verifyVc = async (vc: unknown) => {
    const res = await verifyCredential({ client: h.server.client, body: { verifiableCredential: vc as Record<string, unknown> } });
    expectContractResponse('post', '/v1/credentials/verify', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
    return res.data!;
  };
  const statusCheck = async (vc: unknown) => (await verifyVc(vc)).checks.find((c) => c.check === 'status');

  const change = async (id: string, action: 'revoke' | 'suspend' | 'reinstate', reason = `${action} for a test`, auth = revoker) => {
    const res = await changeCredentialStatus({ client: h.server.client, auth, path: { id }, body: { action, reason } });
    expectContractResponse('post', '/v1/claims/{id}/credential/status', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
    return res;
  };

  /** Digital Bazaar's whole status check of a credential, its lists read from this server. */
  const independentBits = async (vc: VerifiableCredential) => {
    const check = await independentStatusCheck(vc, async (url) => (await fetch(url.replace(BASE, h.server.baseUrl))).json());
    expect(check.verified, String(check.error)).to.equal(true);
    return check.bits;
  };

  /** The bit of a credential's entry, read from the served list with Digital Bazaar's bitstring. */
  async function bitOf(vc: VerifiableCredential, purpose: 'revocation' | 'suspension'): Promise<boolean> {
    const entry = vc.credentialStatus!.find((e) => e.statusPurpose === purpose)!;
    const path = new URL(entry.statusListCredential).pathname;
    const res = await fetch(`${h.server.baseUrl}${path}`);
    expect(res.status).to.equal(200);
    const list = (await res.json()) as VerifiableCredential;
    expect((await verifyVc(list)).verified).to.equal(true);
    const encoded = String(list.credentialSubject.encodedList);
    expect(encoded.startsWith('u')).to.equal(true);
    const bits = new Bitstring({ buffer: await Bitstring.decodeBits({ encoded: encoded.slice(1) }) });
    expect(bits.length).to.equal(131_072);
    return bits.get(Number(entry.statusListIndex));
  }

  it('every new credential has a revocation and a suspension BitstringStatusListEntry on this service', async () => {
    const vc = (await verified()).verifiableCredential!;
    expect(vc.credentialStatus).to.have.length(2);
    const [revocation, suspension] = vc.credentialStatus!;
    expect(revocation).to.deep.include({ type: 'BitstringStatusListEntry', statusPurpose: 'revocation', statusListCredential: `${BASE}/v1/credentials/status/revocation/0` });
    expect(suspension).to.deep.include({ type: 'BitstringStatusListEntry', statusPurpose: 'suspension', statusListCredential: `${BASE}/v1/credentials/status/suspension/0` });
    expect(revocation!.statusListIndex).to.equal(suspension!.statusListIndex);
    expect(revocation!.id).to.equal(`${revocation!.statusListCredential}#${revocation!.statusListIndex}`);
    expect((await statusCheck(vc))!.passed).to.equal(true);
    expect(await independentBits(vc)).to.deep.equal({ revocation: false, suspension: false });
  });

  it('the status list credentials are public, signed (our verifier and Digital Bazaar agree) and the same until a change', async () => {
    for (const purpose of ['revocation', 'suspension'] as const) {
      const res = await getStatusListCredential({ client: h.server.client, path: { purpose, list: '0' } });
      expectContractResponse('get', '/v1/credentials/status/{purpose}/{list}', { status: res.response.status, headers: res.response.headers, body: res.data });
      const list = res.data!;
      expect(list.type).to.deep.equal(['VerifiableCredential', 'BitstringStatusListCredential']);
      expect(list.id).to.equal(`${BASE}/v1/credentials/status/${purpose}/0`);
      expect(list.credentialSubject).to.deep.include({ id: `${list.id}#list`, type: 'BitstringStatusList', statusPurpose: purpose });
      expect((await verifyVc(list)).verified).to.equal(true);
      const independent = await independentVerify(list);
      expect(independent.verified, String(independent.error)).to.equal(true);
      const again = await getStatusListCredential({ client: h.server.client, path: { purpose, list: '0' } });
      expect(again.data).to.deep.equal(list);
    }
    const bad = await fetch(`${h.server.baseUrl}/v1/credentials/status/expiry/0`);
    expect(bad.status).to.equal(400);
    const badList = await fetch(`${h.server.baseUrl}/v1/credentials/status/revocation/01`);
    expect(badList.status).to.equal(400);
    // No index of list 1 was handed out yet; list 99999 could hold none.
    for (const list of ['1', '99999']) {
      const missing = await getStatusListCredential({ client: h.server.client, path: { purpose: 'revocation', list } });
      expect(missing.response.status, list).to.equal(404);
    }
  });

  it('revoke: needs a key with credentials:revoke, is audited, sets the bit, and verify then says revoked; it is final', async () => {
    const claim = await verified();
    const vc = claim.verifiableCredential!;
    expect(await bitOf(vc, 'revocation')).to.equal(false);
    const anonymous = await fetch(`${h.server.baseUrl}/v1/claims/${claim.id}/credential/status`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"action":"revoke","reason":"x"}' });
    expect(anonymous.status).to.equal(401);
    expect((await change(claim.id, 'revoke', 'no scope', h.key)).response.status).to.equal(403);

    const res = await change(claim.id, 'revoke', 'meter found faulty');
    expect(res.response.status).to.equal(200);
    expect(res.data).to.deep.include({ claimId: claim.id, credentialId: vc.id, revoked: true, suspended: false });
    expect(res.data!.events).to.have.length(1);
    expect(res.data!.events[0]).to.deep.include({ action: 'revoke', reason: 'meter found faulty', actor: 'did:ixo:entity:0000000000000000000000000000dddd' });
    const audit = await t.db('twin_credential_status_events').where('claim_id', claim.id);
    expect(audit).to.have.length(1);
    expect(audit[0]).to.include({ action: 'revoke', reason: 'meter found faulty', actor_did: 'did:ixo:entity:0000000000000000000000000000dddd' });
    expect(audit[0]!.api_key_id).to.be.a('string');

    expect(await bitOf(vc, 'revocation')).to.equal(true);
    expect(await bitOf(vc, 'suspension')).to.equal(false);
    expect(await independentBits(vc)).to.deep.equal({ revocation: true, suspension: false });
    const verdict = await verifyVc(vc);
    expect(verdict.verified).to.equal(false);
    expect(verdict.checks.at(-1)).to.deep.equal({ check: 'status', passed: false, message: 'the credential is revoked' });

    for (const action of ['revoke', 'suspend', 'reinstate'] as const) {
      const again = await change(claim.id, action);
      expect(again.response.status, action).to.equal(409);
    }
    const read = await getCredentialStatus({ client: h.server.client, auth: h.key, path: { id: claim.id } });
    expectContractResponse('get', '/v1/claims/{id}/credential/status', { status: read.response.status, headers: read.response.headers, body: read.data });
    expect(read.data).to.deep.include({ revoked: true, suspended: false });
    expect(read.data!.events).to.have.length(1);
  });

  it('suspend and reinstate: verify says suspended, then verified again; each change is audited', async () => {
    const vc = (await verified()).verifiableCredential!;
    const id = String(vc.credentialSubject.claimId);
    expect((await change(id, 'reinstate')).response.status).to.equal(409);
    expect((await change(id, 'suspend', 'under review')).data).to.deep.include({ revoked: false, suspended: true });
    expect(await bitOf(vc, 'suspension')).to.equal(true);
    expect(await independentBits(vc)).to.deep.equal({ revocation: false, suspension: true });
    expect(await statusCheck(vc)).to.deep.equal({ check: 'status', passed: false, message: 'the credential is suspended' });
    expect((await change(id, 'suspend')).response.status).to.equal(409);
    const reinstated = await change(id, 'reinstate', 'review passed');
    expect(reinstated.data).to.deep.include({ revoked: false, suspended: false });
    expect(reinstated.data!.events.map((e) => e.action)).to.deep.equal(['suspend', 'reinstate']);
    expect(await bitOf(vc, 'suspension')).to.equal(false);
    expect(await independentBits(vc)).to.deep.equal({ revocation: false, suspension: false });
    expect((await verifyVc(vc)).verified).to.equal(true);
  });

  it('404 for an unknown claim, 409 for a claim without a credential, 400 for a bad body', async () => {
    expect((await change('kpt_00000000000000000000000000000000', 'revoke')).response.status).to.equal(404);
    const pending = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ testPeriod: { startDate: '2028-01-01', endDate: '2028-01-03' } }) });
    expect(pending.data!.status).to.equal('pending');
    const noCredential = await change(pending.data!.id, 'revoke');
    expect(noCredential.response.status).to.equal(409);
    expect((await getCredentialStatus({ client: h.server.client, auth: h.key, path: { id: pending.data!.id } })).response.status).to.equal(409);
    const claim = await verified();
    for (const body of [{ action: 'revoke' }, { action: 'delete', reason: 'x' }, { action: 'revoke', reason: '' }, { action: 'revoke', reason: 'x', extra: 1 }]) {
      const res = await fetch(`${h.server.baseUrl}/v1/claims/${claim.id}/credential/status`, { method: 'POST', headers: { authorization: `Bearer ${revoker}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).to.equal(400);
    }
    expect(await t.db('twin_credential_status_events').where('claim_id', claim.id)).to.have.length(0);
  });

  it('concurrent changes of one credential run one after another: a revocation is never lost, no change is applied twice, and the audit replays to the state', async () => {
    /** The state the audited events lead to, applying each as the service does. */
    const replay = (actions: string[]) =>
      actions.reduce((s, a) => ({ revoked: s.revoked || a === 'revoke', suspended: a === 'suspend' ? true : a === 'reinstate' ? false : s.suspended }), { revoked: false, suspended: false });
    for (let round = 0; round < 6; round++) {
      const claim = await verified();
      const answers = await Promise.all((['revoke', 'suspend', 'suspend', 'reinstate', 'suspend'] as const).map(async (action) => ({ action, status: (await change(claim.id, action)).response.status })));
      const read = (await getCredentialStatus({ client: h.server.client, auth: h.key, path: { id: claim.id } })).data!;
      // The revoke was taken (nothing before it could refuse it), and it is final.
      expect(answers[0]!.status, JSON.stringify(answers)).to.equal(200);
      expect(read.revoked, JSON.stringify(answers)).to.equal(true);
      // Each 200 is one audited event, in an order the rules allow, which leads to the state read.
      expect(read.events.map((e) => e.action).sort()).to.deep.equal(answers.filter((a) => a.status === 200).map((a) => a.action).sort());
      expect(answers.filter((a) => a.action === 'suspend' && a.status === 200).length, JSON.stringify(answers)).to.be.at.most(2);
      expect(replay(read.events.map((e) => e.action))).to.deep.equal({ revoked: read.revoked, suspended: read.suspended });
      for (const a of answers) expect(a.status, JSON.stringify(answers)).to.be.oneOf([200, 409]);
      const vc = (await getClaim({ client: h.server.client, auth: h.key, path: { id: claim.id } })).data!.verifiableCredential!;
      expect(await bitOf(vc, 'revocation')).to.equal(true);
    }
    // Only one of many concurrent suspensions applies.
    const claim = await verified();
    const suspensions = await Promise.all(Array.from({ length: 12 }, async () => (await change(claim.id, 'suspend')).response.status));
    expect(suspensions.filter((s) => s === 200)).to.have.length(1);
    expect(suspensions.filter((s) => s === 409)).to.have.length(11);
  });

  it('a status entry naming a list this service does not publish fails the status check', async () => {
    const trusted = await loadValidatorKey(t.db, '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
    const foreign = signCredential({
      '@context': ['https://www.w3.org/ns/credentials/v2'],
      type: ['VerifiableCredential'],
      issuer: trusted.did,
      validFrom: '2026-01-01T00:00:00Z',
      credentialSubject: { id: householdDid() },
      credentialStatus: [{ id: 'https://other.example/status/1#5', type: 'BitstringStatusListEntry', statusPurpose: 'revocation', statusListIndex: '5', statusListCredential: 'https://other.example/status/1' }],
    }, trusted);
    expect((await statusCheck(foreign))!.message).to.match(/is not a revocation list this service publishes/);
    const { proof: _proof, ...unsigned } = foreign;
    const [entry] = unsigned.credentialStatus!;
    const tooFar = signCredential({ ...unsigned, credentialStatus: [{ ...entry!, statusListCredential: `${BASE}/v1/credentials/status/revocation/99999` }] }, trusted);
    expect((await statusCheck(tooFar))!.message).to.match(/is not a revocation list this service publishes/);
    const badIndex = signCredential({ ...unsigned, credentialStatus: [{ ...entry!, statusListCredential: `${BASE}/v1/credentials/status/revocation/0`, statusListIndex: '131072' }] }, trusted);
    expect((await statusCheck(badIndex))!.message).to.match(/statusListIndex "131072" is not an entry of the list/);
    const suspensionInRevocationList = signCredential({ ...unsigned, credentialStatus: [{ ...entry!, statusPurpose: 'suspension', statusListCredential: `${BASE}/v1/credentials/status/revocation/0` }] }, trusted);
    expect((await statusCheck(suspensionInRevocationList))!.passed).to.equal(false);
  });

  describe('a claim found wrong after verification: a correction revokes its credential', () => {
    it('the correction (same household, collection, group and period, other logs) supersedes the claim and revokes its credential', async () => {
      const original = await verified();
      const body = kptClaim({
        householdId: original.householdId,
        testGroup: 'intervention',
        testPeriod: original.testPeriod!,
        fuelMeasurements: { total: 6, dailyLogs: [2, 2, 2] },
        corrects: original.id,
      });
      const res = await submitClaim({ client: h.server.client, auth: h.key, body });
      expect(res.response.status).to.equal(201);
      expect(res.data).to.deep.include({ status: 'verified', corrects: original.id });
      const replay = await submitClaim({ client: h.server.client, auth: h.key, body });
      expect(replay.response.status).to.equal(200);
      expect(replay.data!.id).to.equal(res.data!.id);

      const old = (await getClaim({ client: h.server.client, auth: h.key, path: { id: original.id } })).data!;
      expect(old.status).to.equal('rejected');
      expect(old.reasons).to.deep.equal([{ rule: 'corrected', message: `Found wrong after it was checked: corrected by claim ${res.data!.id}.` }]);
      const status = (await getCredentialStatus({ client: h.server.client, auth: h.key, path: { id: original.id } })).data!;
      expect(status).to.deep.include({ revoked: true });
      expect(status.events[0]).to.deep.include({ action: 'revoke', reason: `corrected by claim ${res.data!.id}`, actor: PARTNER_DID });
      expect((await statusCheck(original.verifiableCredential))!.message).to.equal('the credential is revoked');
      expect((await verifyVc(res.data!.verifiableCredential)).verified).to.equal(true);
    });

    it("a correction racing an operator's suspension still revokes the credential, whichever runs first, and nothing answers 500", async () => {
      for (let round = 0; round < 5; round++) {
        const original = await verified();
        const body = kptClaim({ householdId: original.householdId, testGroup: 'intervention', testPeriod: original.testPeriod!, fuelMeasurements: { total: 6, dailyLogs: [2, 2, 2] }, corrects: original.id });
        const [corrected, suspended] = await Promise.all([submitClaim({ client: h.server.client, auth: h.key, body }), change(original.id, 'suspend', 'under review')]);
        expect(corrected.response.status).to.equal(201);
        // Before the correction's revocation, or after it (revocation is final): never lost.
        expect(suspended.response.status).to.be.oneOf([200, 409]);
        const status = (await getCredentialStatus({ client: h.server.client, auth: h.key, path: { id: original.id } })).data!;
        expect(status.revoked, JSON.stringify(status.events)).to.equal(true);
        expect(status.events.map((e) => e.action)).to.deep.equal(suspended.response.status === 200 ? ['suspend', 'revoke'] : ['revoke']);
        expect((await change(original.id, 'reinstate')).response.status).to.equal(409);
        expect((await verifyVc(original.verifiableCredential)).verified).to.equal(false);
      }
    });

    it('refuses a correction of an unknown claim or of another household (400), by another caller (403), of a rejected claim (409), changing nothing', async () => {
      const original = await verified();
      const correction = (over: Partial<KptClaimRequest>) => kptClaim({ householdId: original.householdId, testGroup: 'intervention', testPeriod: original.testPeriod!, fuelMeasurements: { total: 6, dailyLogs: [2, 2, 2] }, corrects: original.id, ...over });
      const unknown = await submitClaim({ client: h.server.client, auth: h.key, body: correction({ corrects: 'kpt_00000000000000000000000000000000' }) });
      expect(unknown.response.status).to.equal(400);
      expect((unknown.error as any).errors[0]).to.include({ pointer: '/body/corrects', rule: 'correction-target' });
      const otherHousehold = await submitClaim({ client: h.server.client, auth: h.key, body: correction({ householdId: householdDid() }) });
      expect(otherHousehold.response.status).to.equal(400);
      const otherCaller = await submitClaim({ client: h.server.client, auth: h.otherKey, body: correction({}) });
      expect(otherCaller.response.status).to.equal(403);
      expect((await getClaim({ client: h.server.client, auth: h.key, path: { id: original.id } })).data!.status).to.equal('verified');
      expect((await statusCheck(original.verifiableCredential))!.passed).to.equal(true);

      const rejected = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ testPeriod: undefined, testGroup: 'reference', householdId: householdDid() }) });
      expect(rejected.data!.status).to.equal('rejected');
      const ofRejected = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ householdId: rejected.data!.householdId, testPeriod: undefined, corrects: rejected.data!.id, fuelMeasurements: { total: 6, dailyLogs: [2, 2, 2] } }) });
      expect(ofRejected.response.status).to.equal(409);
      expect((ofRejected.error as any).errors[0]).to.include({ pointer: '/body/corrects', rule: 'correction-target-rejected' });
    });
  });
});
