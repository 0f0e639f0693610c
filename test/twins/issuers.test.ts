// Issue 53, 1 and 2: a validator key change keeps every credential's status list signed by the
// key that issued it (Digital Bazaar's status check agrees), and the public base URL is the
// database's: instances share it, another one is refused at start-up, a deliberate move keeps
// earlier credentials verifying. On SQLite and PostgreSQL.
import { expect } from 'chai';
import { changeCredentialStatus, getStatusListCredential, submitClaim, verifyCredential } from '../../generated/openapi/sdk.gen.ts';
import type { KptClaim, VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { ConfigError } from '../../src/config.ts';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { CredentialStatusService } from '../../src/twins/credentials/credential-status.service.ts';
import { STATUS_LIST_SIZE } from '../../src/twins/credentials/credential-status.ts';
import { moveBaseUrl } from '../../src/twins/credentials/public-base-url.ts';
import { loadValidatorKeys } from '../../src/twins/credentials/validator-key.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';
import { createCensusCampaign, kptClaim, PARTNER_DID } from './fixtures.ts';
import { didKeyOfSeed, independentStatusCheck } from './independent-verifier.ts';
import { UnavailableError } from '../../src/platform/domain-errors.ts';
import { toAppError } from '../../src/platform/http/errors.ts';

const SEED_A = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const SEED_B = '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb';
const SEED_C = 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7';
const BASE = 'https://hearth.example.org';
const REVOKER_DID = 'did:ixo:entity:0000000000000000000000000000dddd';
let periods = 0;

async function keysOf(db: Parameters<typeof createTestKey>[0]) {
  return {
    partner: await createTestKey(db, { principalDid: PARTNER_DID, scopes: ['twins:read', 'twins:write', 'claims:read', 'claims:write'] }),
    revoker: await createTestKey(db, { principalDid: REVOKER_DID, scopes: ['credentials:revoke', 'claims:read'] }),
  };
}

/** A verified intervention claim (with its reference partner), on its own test period. */
async function verified(server: TestServer, key: string): Promise<KptClaim> {
  const start = new Date(Date.UTC(2027, 0, 1) + periods++ * 4 * 86_400_000).toISOString().slice(0, 10);
  const end = new Date(Date.parse(`${start}T00:00:00Z`) + 2 * 86_400_000).toISOString().slice(0, 10);
  const testPeriod = { startDate: start, endDate: end };
  await submitClaim({ client: server.client, auth: key, body: kptClaim({ testPeriod }) });
  const res = await submitClaim({ client: server.client, auth: key, body: kptClaim({ testGroup: 'intervention', testPeriod }) });
  expect(res.data!.status).to.equal('verified');
  return res.data!;
}

const listOf = (vc: VerifiableCredential) => Number(new URL(vc.credentialStatus![0]!.statusListCredential).pathname.split('/').at(-1));

/** Digital Bazaar's status check, the lists fetched from `server` (whatever base URL they name). */
async function independentBits(server: TestServer, vc: VerifiableCredential) {
  const check = await independentStatusCheck(vc, async (url) => (await fetch(`${server.baseUrl}${new URL(url).pathname}`)).json());
  expect(check.verified, String(check.error)).to.equal(true);
  return check.bits;
}

const verifiedAt = async (server: TestServer, vc: unknown) => (await verifyCredential({ client: server.client, body: { verifiableCredential: vc as Record<string, unknown> } })).data!;

async function startRefused(db: Parameters<typeof startTestServer>[0], env: Record<string, string>): Promise<Error> {
  let err: unknown;
  try {
    const server = await startTestServer(db, env);
    await server.stop();
  } catch (e) {
    err = e;
  }
  expect(err).to.be.instanceOf(ConfigError);
  return err as Error;
}

forEachDatabase('a validator key change', (t) => {
  let keys: Awaited<ReturnType<typeof keysOf>>;
  let server: TestServer;
  let earlier: { revoked: VerifiableCredential; standing: VerifiableCredential; standingClaim: string };
  before(async () => {
    keys = await keysOf(t.db);
    const a = await startTestServer(t.db, { PUBLIC_BASE_URL: BASE, VALIDATOR_PRIVATE_KEY: SEED_A });
    try {
      await createCensusCampaign(a, keys.partner);
      const revoked = await verified(a, keys.partner);
      const standing = await verified(a, keys.partner);
      await changeCredentialStatus({ client: a.client, auth: keys.revoker, path: { id: revoked.id }, body: { action: 'revoke', reason: 'scale found faulty' } });
      earlier = { revoked: revoked.verifiableCredential!, standing: standing.verifiableCredential!, standingClaim: standing.id };
    } finally {
      await a.stop();
    }
    server = await startTestServer(t.db, { PUBLIC_BASE_URL: BASE, VALIDATOR_PRIVATE_KEY: SEED_B, VALIDATOR_RETIRED_KEYS: SEED_A });
  });
  after(() => server.stop());

  it("earlier credentials keep their status lists, signed by their own key: Digital Bazaar's check and our verify agree, revoked or not", async () => {
    expect(earlier.revoked.issuer).to.equal(await didKeyOfSeed(Buffer.from(SEED_A, 'hex')));
    expect(await independentBits(server, earlier.revoked)).to.deep.equal({ revocation: true, suspension: false });
    expect(await independentBits(server, earlier.standing)).to.deep.equal({ revocation: false, suspension: false });
    const list = (await getStatusListCredential({ client: server.client, path: { purpose: 'revocation', list: String(listOf(earlier.standing)) } })).data!;
    expect(list.issuer).to.equal(earlier.standing.issuer);
    expect((await verifiedAt(server, earlier.standing)).verified).to.equal(true);
    expect((await verifiedAt(server, earlier.revoked)).checks.at(-1)).to.deep.equal({ check: 'status', passed: false, message: 'the credential is revoked' });
  });

  it("the retired key still signs its lists' updates: revoking an earlier credential after the change sets its bit in its own key's list", async () => {
    const res = await changeCredentialStatus({ client: server.client, auth: keys.revoker, path: { id: earlier.standingClaim }, body: { action: 'suspend', reason: 'under review' } });
    expect(res.response.status).to.equal(200);
    expect(await independentBits(server, earlier.standing)).to.deep.equal({ revocation: false, suspension: true });
    expect((await verifiedAt(server, earlier.standing)).checks.at(-1)).to.deep.include({ passed: false, message: 'the credential is suspended' });
    await changeCredentialStatus({ client: server.client, auth: keys.revoker, path: { id: earlier.standingClaim }, body: { action: 'reinstate', reason: 'review passed' } });
    expect(await independentBits(server, earlier.standing)).to.deep.equal({ revocation: false, suspension: false });
  });

  it('new credentials are issued by the new key, on a list of its own that it signs', async () => {
    const vc = (await verified(server, keys.partner)).verifiableCredential!;
    expect(vc.issuer).to.equal(await didKeyOfSeed(Buffer.from(SEED_B, 'hex')));
    expect(listOf(vc)).not.to.equal(listOf(earlier.standing));
    expect(await independentBits(server, vc)).to.deep.equal({ revocation: false, suspension: false });
    expect((await verifiedAt(server, vc)).verified).to.equal(true);
  });

  it('a status entry pointing at a list another key keeps fails our status check, as it fails the standard one', async () => {
    const vc = (await verified(server, keys.partner)).verifiableCredential!;
    const foreignList = earlier.standing.credentialStatus!.map((e) => ({ ...e }));
    const res = await verifiedAt(server, { ...vc, credentialStatus: foreignList });
    // The signature breaks first; the status check on its own names the mismatch.
    expect(res.verified).to.equal(false);
    const statuses = new CredentialStatusService(t.db, { base: BASE, keys: await loadValidatorKeys(t.db, SEED_B, [SEED_A]) });
    expect(await statuses.check({ ...vc, credentialStatus: foreignList })).to.deep.equal({ passed: false, message: `status list ${listOf(earlier.standing)} is kept by ${earlier.standing.issuer}, not by the credential's issuer` });
  });

  it("a start with another key is refused, writing nothing, while a list's key has no seed; a retired seed of a key never used is refused", async () => {
    const keysBefore = await t.db('twin_validator_keys').orderBy('did');
    const missing = await startRefused(t.db, { PUBLIC_BASE_URL: BASE, VALIDATOR_PRIVATE_KEY: SEED_C, VALIDATOR_RETIRED_KEYS: SEED_B });
    expect(missing.message).to.match(/^Invalid configuration:\n {2}VALIDATOR_RETIRED_KEYS: status lists are signed by the validator key did:key:z6Mk\S+, whose seed this instance is not given/);
    expect(missing.message).to.include(await didKeyOfSeed(Buffer.from(SEED_A, 'hex')));
    const unknown = await startRefused(t.db, { PUBLIC_BASE_URL: BASE, VALIDATOR_PRIVATE_KEY: SEED_B, VALIDATOR_RETIRED_KEYS: `${SEED_A},${SEED_C}` });
    expect(unknown.message).to.equal(`Invalid configuration:\n  VALIDATOR_RETIRED_KEYS: ${await didKeyOfSeed(Buffer.from(SEED_C, 'hex'))} is not a validator key this database has used`);
    expect(await t.db('twin_validator_keys').orderBy('did')).to.deep.equal(keysBefore);
  });

  it('a retired key issues nothing new: an instance still holding it is refused a status index', async () => {
    const retired = await loadValidatorKeys(t.db, SEED_A, [SEED_B]);
    // Another instance starts with key B again: A is retired under the first.
    await loadValidatorKeys(t.db, SEED_B, [SEED_A]);
    const stale = new CredentialStatusService(t.db, { base: BASE, keys: retired });
    let err: Error | undefined;
    await inTransaction(t.db, (sql) => stale.indexIn(sql)).catch((e: Error) => (err = e));
    expect(err?.message).to.match(/validator key did:key:\S+ is retired .*issues nothing new/);
    // Not the request's fault, nor a fault of the service: 503 with Retry-After, in the area's shape.
    expect(err).to.be.instanceOf(UnavailableError);
    expect(toAppError(err).status).to.equal(503);
  });
});

forEachDatabase('status indexes spread over their list', (t) => {
  it('a list hands out distinct positions in no order an observer can follow (herd privacy)', async () => {
    const keys = await loadValidatorKeys(t.db, SEED_A, []);
    const statuses = new CredentialStatusService(t.db, { base: BASE, keys });
    const indexes: number[] = [];
    for (let i = 0; i < 200; i++) indexes.push(await statuses.nextIndex());
    expect(new Set(indexes).size).to.equal(200);
    expect(indexes.every((i) => i >= 0 && i < STATUS_LIST_SIZE)).to.equal(true);
    // In issue order they would be 0, 1, 2, ...: spread, they are neither consecutive nor sorted.
    expect(indexes.filter((index, n) => n > 0 && index === indexes[n - 1]! + 1).length).to.be.below(10);
    expect([...indexes].sort((x, y) => x - y)).not.to.deep.equal(indexes);
    expect(Math.max(...indexes)).to.be.above(STATUS_LIST_SIZE / 2);
  });
});

forEachDatabase('the public base URL is the database’s', (t) => {
  let key: string;
  before(async () => {
    key = (await keysOf(t.db)).partner;
    // The campaign kptClaim's claims go into (this first start records the base URL the tests expect).
    const first = await startTestServer(t.db, { PORT: '3101' });
    await createCensusCampaign(first, key);
    await first.stop();
  });

  it('two instances without PUBLIC_BASE_URL (another PORT each) sign under the same URL, and each verifies the other’s credentials', async () => {
    const one = await startTestServer(t.db, { PORT: '3101' });
    const two = await startTestServer(t.open(), { PORT: '3102' });
    try {
      for (let n = 0; n < 3; n++) {
        const [a, b] = [(await verified(one, key)).verifiableCredential!, (await verified(two, key)).verifiableCredential!];
        expect(a.credentialStatus![0]!.statusListCredential.startsWith('http://localhost:3101/')).to.equal(true);
        expect(b.credentialStatus![0]!.statusListCredential.startsWith('http://localhost:3101/')).to.equal(true);
        expect((await verifiedAt(two, a)).verified, 'one’s at two').to.equal(true);
        expect((await verifiedAt(one, b)).verified, 'two’s at one').to.equal(true);
      }
    } finally {
      await one.stop();
      await two.stop();
    }
  });

  it('a start with another PUBLIC_BASE_URL is refused with a message saying how to move it', async () => {
    const err = await startRefused(t.db, { PUBLIC_BASE_URL: BASE });
    expect(err.message).to.equal(
      'Invalid configuration:\n  PUBLIC_BASE_URL: is https://hearth.example.org, but this database signs credentials under http://localhost:3101 (every instance uses the database\'s URL). ' +
        'Set it to http://localhost:3101 or leave it unset; to move new credentials to https://hearth.example.org, run `hearth move-base-url https://hearth.example.org` once (credentials signed under earlier URLs keep verifying)',
    );
    // The recorded URL given explicitly (a trailing slash is the same URL) starts.
    const same = await startTestServer(t.db, { PUBLIC_BASE_URL: 'http://localhost:3101/' });
    await same.stop();
  });

  it('after a deliberate move, new credentials name the new URL on lists of their own, and earlier credentials still verify, at our endpoint and independently', async () => {
    const old = await startTestServer(t.db, { PORT: '3101' });
    const earlier = (await verified(old, key)).verifiableCredential!;
    await old.stop();
    expect(await moveBaseUrl(t.db, BASE)).to.equal('http://localhost:3101');
    expect(await moveBaseUrl(t.db, BASE)).to.equal(BASE);
    const moved = await startTestServer(t.db, { PUBLIC_BASE_URL: BASE });
    try {
      const later = (await verified(moved, key)).verifiableCredential!;
      expect(later.credentialStatus![0]!.statusListCredential).to.equal(`${BASE}/v1/credentials/status/revocation/${listOf(later)}`);
      expect(listOf(later)).not.to.equal(listOf(earlier));
      for (const vc of [earlier, later]) {
        expect((await verifiedAt(moved, vc)).verified, vc.credentialStatus![0]!.statusListCredential).to.equal(true);
        expect(await independentBits(moved, vc)).to.deep.equal({ revocation: false, suspension: false });
      }
      // Each list is served under the URL its credentials name it by.
      const earlierList = (await getStatusListCredential({ client: moved.client, path: { purpose: 'revocation', list: String(listOf(earlier)) } })).data!;
      expect(earlierList.id).to.equal(earlier.credentialStatus![0]!.statusListCredential);
      // Under a URL that never named the list, an entry is not this service's.
      const elsewhere = { ...earlier, credentialStatus: earlier.credentialStatus!.map((e) => ({ ...e, statusListCredential: e.statusListCredential.replace('http://localhost:3101', BASE) })) };
      const keys = await loadValidatorKeys(t.db, undefined, []);
      const statuses = new CredentialStatusService(t.db, { base: BASE, keys });
      expect((await statuses.check(elsewhere)).message).to.match(/is not a revocation list this service publishes/);
      // An instance still configured with the old URL is refused.
      expect((await startRefused(t.db, { PUBLIC_BASE_URL: 'http://localhost:3101' })).message).to.match(/PUBLIC_BASE_URL: is http:\/\/localhost:3101, but this database signs credentials under https:\/\/hearth\.example\.org/);
    } finally {
      await moved.stop();
    }
  });
});
