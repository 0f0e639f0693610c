// Issue 53, 4: what a wallet or a verifier expects of the public credential resources: CORS open
// on them alone, status lists cacheable (ETag, Cache-Control, ttl) and valid for a bounded time,
// a claim that says when its credential is revoked or suspended, and the VC API's verify request.
// On SQLite and PostgreSQL.
import { expect } from 'chai';
import { changeCredentialStatus, getClaim, submitClaim } from '../../generated/openapi/sdk.gen.ts';
import type { KptClaim } from '../../generated/openapi/types.gen.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey } from '../helpers/server.ts';
import { kptClaim, startTwinsHarness, type TwinsHarness } from './fixtures.ts';
import { independentStatusCheck } from './independent-verifier.ts';

const ORIGIN = 'https://wallet.example';
let periods = 0;

forEachDatabase('what a wallet or verifier expects', (t) => {
  let h: TwinsHarness;
  let revoker: string;
  let claim: KptClaim;
  before(async () => {
    h = await startTwinsHarness(t.db);
    revoker = await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000dddd', scopes: ['credentials:revoke', 'claims:read'] });
    claim = await verified();
  });
  after(() => h.server.stop());

  async function verified(): Promise<KptClaim> {
    const start = new Date(Date.UTC(2027, 5, 1) + periods++ * 4 * 86_400_000).toISOString().slice(0, 10);
    const end = new Date(Date.parse(`${start}T00:00:00Z`) + 2 * 86_400_000).toISOString().slice(0, 10);
    const testPeriod = { startDate: start, endDate: end };
    await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ testPeriod }) });
    return (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ testGroup: 'intervention', testPeriod }) })).data!;
  }
  const url = (path: string) => `${h.server.baseUrl}${path}`;
  const listPath = (c: KptClaim) => new URL(c.verifiableCredential!.credentialStatus![0]!.statusListCredential).pathname;

  it('CORS is open to any origin on the context, status lists, evidence and verify, and not on the rest of /v1', async () => {
    for (const path of ['/v1/contexts/kpt-v1.jsonld', listPath(claim), `/v1/evidence/${claim.claimCid}`]) {
      const res = await fetch(url(path), { headers: { origin: ORIGIN } });
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('access-control-allow-origin'), path).to.equal('*');
      expect(res.headers.get('access-control-expose-headers')?.split(', '), path).to.include.members(['ETag', 'Retry-After', 'RateLimit', 'RateLimit-Policy']);
    }
    const preflight = await fetch(url('/v1/credentials/verify'), { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    expect(preflight.status).to.equal(204);
    expect(preflight.headers.get('access-control-allow-origin')).to.equal('*');
    expect(preflight.headers.get('access-control-allow-methods')).to.include('POST');
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).to.include('content-type');
    const verify = await fetch(url('/v1/credentials/verify'), { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/json' }, body: JSON.stringify({ verifiableCredential: claim.verifiableCredential }) });
    expect(verify.headers.get('access-control-allow-origin')).to.equal('*');
    // The keyed API is not opened (API_CORS_ORIGINS is unset here).
    const claims = await fetch(url(`/v1/claims/${claim.id}`), { headers: { origin: ORIGIN, authorization: `Bearer ${h.key}` } });
    expect(claims.status).to.equal(200);
    expect(claims.headers.get('access-control-allow-origin')).to.equal(null);
    const claimsPreflight = await fetch(url('/v1/claims'), { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } });
    expect(claimsPreflight.headers.get('access-control-allow-origin')).to.equal(null);
    const ownStatus = await fetch(url(`/v1/claims/${claim.id}/credential/status`), { headers: { origin: ORIGIN, authorization: `Bearer ${h.key}` } });
    expect(ownStatus.headers.get('access-control-allow-origin')).to.equal(null);
  });

  it('a status list has an ETag (304 while unchanged, another after a change), Cache-Control and ttl, and a validUntil the standard check accepts', async () => {
    const first = await fetch(url(listPath(claim)));
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
    expect(first.headers.get('cache-control')).to.equal('public, max-age=300');
    const list = await first.json();
    expectContractResponse('get', '/v1/credentials/status/{purpose}/{list}', { status: 200, headers: first.headers, body: list });
    expect(list.credentialSubject.ttl).to.equal(300_000);
    const endOfNextDay = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 2)).toISOString();
    expect(list.validUntil).to.equal(endOfNextDay);
    expect((await fetch(url(listPath(claim)), { headers: { 'if-none-match': etag } })).status).to.equal(304);
    const other = await verified();
    await changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id: other.id }, body: { action: 'suspend', reason: 'under review' } });
    const changed = await fetch(url(listPath(claim)), { headers: { 'if-none-match': etag } });
    expect(changed.status).to.equal(200);
    expect(changed.headers.get('etag')).not.to.equal(etag);
    const check = await independentStatusCheck(claim.verifiableCredential!, async (u) => (await fetch(url(new URL(u).pathname))).json());
    expect(check.verified, String(check.error)).to.equal(true);
  });

  it('a claim shows whether its credential is valid, suspended or revoked', async () => {
    const c = await verified();
    const state = async () => {
      const res = await getClaim({ client: h.server.client, auth: h.key, path: { id: c.id } });
      expectContractResponse('get', '/v1/claims/{id}', { status: res.response.status, headers: res.response.headers, body: res.data });
      return res.data!.credentialState;
    };
    expect(c.credentialState).to.equal('valid');
    await changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id: c.id }, body: { action: 'suspend', reason: 'under review' } });
    expect(await state()).to.equal('suspended');
    await changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id: c.id }, body: { action: 'reinstate', reason: 'review passed' } });
    expect(await state()).to.equal('valid');
    await changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id: c.id }, body: { action: 'revoke', reason: 'scale found faulty' } });
    expect(await state()).to.equal('revoked');
    // A claim without a credential shows no state.
    const pending = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ testPeriod: { startDate: '2029-01-01', endDate: '2029-01-03' } }) })).data!;
    expect(pending.status).to.equal('pending');
    expect(pending).not.to.have.property('credentialState');
  });

  it('verify takes the VC API request shape (verifiableCredential, options); an option Hearth would not apply is a 400 naming it', async () => {
    const post = (body: unknown) => fetch(url('/v1/credentials/verify'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const ok = await post({ verifiableCredential: claim.verifiableCredential, options: {} });
    expect(ok.status).to.equal(200);
    expect((await ok.json()).verified).to.equal(true);
    const refused = await post({ verifiableCredential: claim.verifiableCredential, options: { challenge: '1f44d55f' } });
    expect(refused.status).to.equal(400);
    expect(JSON.stringify((await refused.json()).errors)).to.include('/body/options');
  });
});
