// Verifiable credentials (VC 2.0, eddsa-jcs-2022), evidence by CID, credential verification and
// the validator key's persistence, on SQLite and PostgreSQL.
import { get as httpGet } from 'node:http';
import { Writable } from 'node:stream';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { expect } from 'chai';
import { pino } from 'pino';
import canonicalize from 'canonicalize';
import { base58btc } from 'multiformats/bases/base58';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { getClaim, getEvidence, submitClaim, verifyCredential } from '../../generated/openapi/sdk.gen.ts';
import type { KptClaim, KptClaimRequest, VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { ConfigError } from '../../src/config.ts';
import { up as addProofContexts } from '../../src/twins/migrations/102_twins_proof_context.ts';
import { signCredential } from '../../src/twins/credentials/credentials.ts';
import { cidOf } from '../../src/twins/claims/evidence.ts';
import { loadValidatorKey } from '../../src/twins/credentials/validator-key.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';
import { createCensusCampaign, kptClaim } from './fixtures.ts';
import { didKeyOfSeed, independentSign, independentVerify, offlineLoader } from './independent-verifier.ts';

// RFC 8032 section 7.1, test 1.
const RFC8032_SECRET = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const RFC8032_PUBLIC = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
const rfc8032DidKey = () => `did:key:${base58btc.encode(Uint8Array.from([0xed, 0x01, ...Buffer.from(RFC8032_PUBLIC, 'hex')]))}`;

/** Submits an aligned reference + intervention pair; returns the verified intervention claim. */
async function verifiedClaim(server: TestServer, key: string, overrides: Partial<KptClaimRequest> = {}): Promise<KptClaim> {
  const start = `2026-0${1 + Math.floor(Math.random() * 8)}-1${Math.floor(Math.random() * 7)}`;
  const end = new Date(Date.parse(`${start}T00:00:00Z`) + 2 * 86_400_000).toISOString().slice(0, 10);
  const period = { testPeriod: { startDate: start, endDate: end } };
  await submitClaim({ client: server.client, auth: key, body: kptClaim({ ...period, ...overrides }) });
  const res = await submitClaim({ client: server.client, auth: key, body: kptClaim({ testGroup: 'intervention', ...period, ...overrides }) });
  expect(res.data!.status).to.equal('verified');
  return res.data!;
}

/** eddsa-jcs-2022 verification written from the spec (section 3.3.2), independent of src/twins/credentials/credentials.ts. */
function independentlyVerifies(vc: VerifiableCredential): boolean {
  const { proof, ...doc } = vc;
  const { proofValue, ...options } = proof;
  expect(options['@context']).to.deep.equal(doc['@context']);
  const h = (v: unknown) => createHash('sha256').update(canonicalize(v)!, 'utf8').digest();
  const data = Buffer.concat([h(options), h(doc)]);
  const multikey = base58btc.decode(String(options.verificationMethod).split('#')[1]!);
  expect([...multikey.slice(0, 2)]).to.deep.equal([0xed, 0x01]);
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), multikey.slice(2)]);
  return verify(null, data, createPublicKey({ key: spki, format: 'der', type: 'spki' }), base58btc.decode(proofValue));
}

/** Every path to a leaf of a JSON value. */
function leafPaths(v: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (v && typeof v === 'object') {
    return Object.entries(v).flatMap(([k, x]) => leafPaths(x, [...prefix, Array.isArray(v) ? Number(k) : k]));
  }
  return [prefix];
}

function tampered<T>(value: T, path: (string | number)[]): T {
  const copy = structuredClone(value) as any;
  let node = copy;
  for (const p of path.slice(0, -1)) node = node[p];
  const last = path[path.length - 1]!;
  const old = node[last];
  node[last] = typeof old === 'number' ? old + 1 : typeof old === 'boolean' ? !old : `${old}x`;
  return copy;
}


/**
 * A CIDv1 written out as the CID and multibase specs lay it out, with no CID library: version 1,
 * codec raw (0x55), multihash sha2-256 (0x12, 32 bytes), in base32 lower case without padding
 * (RFC 4648) behind the multibase prefix "b".
 */
function cidByHand(bytes: Uint8Array): string {
  const all = [0x01, 0x55, 0x12, 0x20, ...createHash('sha256').update(bytes).digest()];
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = 'b';
  let buffer = 0;
  let bits = 0;
  for (const byte of all) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return bits ? out + alphabet[(buffer << (5 - bits)) & 31] : out;
}
forEachDatabase('credentials and evidence', (t) => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(t.db);
    key = await createTestKey(t.db);
    await createCensusCampaign(server, key);
  });
  after(() => server.stop());

  const verifyVc = async (vc: unknown) => {
    const res = await verifyCredential({ client: server.client, body: { verifiableCredential: vc as Record<string, unknown> } });
    expectContractResponse('post', '/v1/credentials/verify', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
    return res.data!;
  };

  it('a verified claim carries the spec summary and a VC 2.0 credential with an eddsa-jcs-2022 proof by a did:key', async () => {
    const claim = await verifiedClaim(server, key);
    const vc = claim.verifiableCredential!;
    expect(claim.credential).to.deep.equal({ type: 'KPTCredential', issuer: vc.issuer, evidence: [`ipfs://${claim.claimCid}`, 'https://example.org/kpt/selection.pdf'] });
    expect(vc.issuer).to.match(/^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]+$/);
    expect(vc['@context'][0]).to.equal('https://www.w3.org/ns/credentials/v2');
    expect(vc.type).to.deep.equal(['VerifiableCredential', 'KPTCredential']);
    expect(vc.credentialSubject).to.deep.include({ id: claim.householdId, claimId: claim.id, testGroup: 'intervention', days: 3, totalFuelKg: 7.5 });
    expect(vc.evidence![0]).to.include({ id: `ipfs://${claim.claimCid}` });
    expect(vc.proof).to.include({ type: 'DataIntegrityProof', cryptosuite: 'eddsa-jcs-2022', proofPurpose: 'assertionMethod', verificationMethod: `${vc.issuer}#${vc.issuer.slice(8)}` });
    expect(vc.proof.proofValue).to.match(/^z[1-9A-HJ-NP-Za-km-z]{80,90}$/);
    expect(independentlyVerifies(vc)).to.equal(true);
  });

  it('POST /v1/credentials/verify accepts it and refuses it after any field is changed', async () => {
    const vc = (await verifiedClaim(server, key)).verifiableCredential!;
    const ok = await verifyVc(vc);
    expect(ok).to.deep.include({ verified: true, issuer: vc.issuer, trustedIssuer: true });
    expect(ok.checks.every((c) => c.passed)).to.equal(true);
    const paths = leafPaths(vc);
    expect(paths.length).to.be.greaterThan(20);
    for (const path of paths) {
      const res = await verifyVc(tampered(vc, path));
      expect(res.verified, `changing ${path.join('.')} must break verification`).to.equal(false);
      expect(res.checks.find((c) => !c.passed)!.message).to.be.a('string');
    }
    const { proof: _p, ...unsigned } = vc;
    const noProof = await verifyVc(unsigned);
    expect(noProof.checks).to.deep.equal([{ check: 'shape', passed: false, message: noProof.checks[0]!.message }]);
    const added = await verifyVc({ ...vc, extra: 'field' });
    expect(added.checks.find((c) => c.check === 'signature')!.passed).to.equal(false);
  });

  it('a valid proof by a key that is not a validator here is not verified', async () => {
    const stranger = await loadValidatorKey(t.db, RFC8032_SECRET);
    await t.db('twin_validator_keys').where('did', stranger.did).delete();
    const vc = signCredential({ '@context': ['https://www.w3.org/ns/credentials/v2'], type: ['VerifiableCredential'], issuer: stranger.did, validFrom: '2026-01-01T00:00:00Z', credentialSubject: { id: 'did:ixo:entity:1' } }, stranger);
    const res = await verifyVc(vc);
    expect(res).to.deep.include({ verified: false, trustedIssuer: false });
    expect(res.checks.find((c) => c.check === 'signature')!.passed).to.equal(true);
    expect(res.checks.find((c) => c.check === 'trusted-issuer')!.passed).to.equal(false);
  });

  it('POST /v1/credentials/verify takes a proof set (an array of proofs) and checks validUntil', async () => {
    const vc = (await verifiedClaim(server, key)).verifiableCredential!;
    const witness = await loadValidatorKey(t.db, RFC8032_SECRET);
    const { proof, ...doc } = vc;
    const set = await verifyVc({ ...doc, proof: [proof, signCredential(doc, witness).proof] });
    expect(set.verified, JSON.stringify(set.checks)).to.equal(true);
    const expired = await verifyVc(signCredential({ ...doc, issuer: witness.did, validUntil: '2026-01-01T00:00:00Z' }, witness));
    expect(expired.checks.find((c) => !c.passed)).to.deep.equal({ check: 'validity-period', passed: false, message: 'not valid after 2026-01-01T00:00:00Z' });
  });

  it('400 when the body has no verifiableCredential', async () => {
    const res = await verifyCredential({ client: server.client, body: {} as never });
    expect(res.response.status).to.equal(400);
  });

  it("a claim's CID is the one `ipfs add --cid-version 1 --raw-leaves` gives: the published CID of \"hello world\"", () => {
    const hello = new TextEncoder().encode('hello world');
    expect(cidByHand(hello)).to.equal('bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e');
    expect(cidOf(hello)).to.equal(cidByHand(hello));
  });

  it('GET /v1/evidence/{cid} returns the stored canonical claim byte for byte; its CIDv1 is the path', async () => {
    const claim = await verifiedClaim(server, key);
    const res = await fetch(`${server.baseUrl}/v1/evidence/${claim.claimCid}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const cid = CID.parse(claim.claimCid);
    expect(cid.version).to.equal(1);
    expect(cid.multihash.code).to.equal(sha256.code);
    expect(CID.createV1(cid.code, await sha256.digest(bytes)).toString()).to.equal(claim.claimCid);
    // And without multiformats (which Hearth uses too): the CID's bytes as the spec lays them out.
    expect(cidByHand(bytes)).to.equal(claim.claimCid);
    const text = new TextDecoder().decode(bytes);
    expect(canonicalize(JSON.parse(text))).to.equal(text);
    expect(JSON.parse(text)).to.deep.include({ id: claim.id, householdId: claim.householdId, fuelMeasurements: claim.fuelMeasurements });

    const sdk = await getEvidence({ client: server.client, auth: key, path: { cid: claim.claimCid } });
    expectContractResponse('get', '/v1/evidence/{cid}', { status: 200, headers: sdk.response.headers, body: sdk.data });
    const missing = await getEvidence({ client: server.client, auth: key, path: { cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' } });
    expect(missing.response.status).to.equal(404);
    // Public: a third party holding the credential reads the evidence at the URL it names.
    const evidenceUrl = String(claim.verifiableCredential!.evidence![0]!.evidenceUrl);
    expect(evidenceUrl).to.equal(`http://localhost:3000/v1/evidence/${claim.claimCid}`);
    const noKey = await fetch(`${server.baseUrl}${new URL(evidenceUrl).pathname}`);
    expect(noKey.status).to.equal(200);
    expect(new Uint8Array(await noKey.arrayBuffer())).to.deep.equal(bytes);
    // Content-addressed: a client holding the bytes revalidates by the CID, and hears 304.
    expect(res.headers.get('etag')).to.equal(`"${claim.claimCid}"`);
    const cached = await new Promise<number>((resolve, reject) =>
      httpGet(`${server.baseUrl}/v1/evidence/${claim.claimCid}`, { headers: { authorization: `Bearer ${key}`, 'if-none-match': `"${claim.claimCid}"` } }, (r) => {
        r.resume();
        resolve(r.statusCode!);
      }).on('error', reject),
    );
    expect(cached).to.equal(304);
    // fetch adds Cache-Control: no-cache to a conditional request: a request to revalidate, which
    // the origin answers 304 as well (RFC 9110 §13.2.1), with the validator and caching headers.
    for (const inm of [`"${claim.claimCid}"`, `W/"${claim.claimCid}"`, `"other", "${claim.claimCid}"`, '*']) {
      const revalidated = await fetch(`${server.baseUrl}/v1/evidence/${claim.claimCid}`, { headers: { 'if-none-match': inm, 'cache-control': 'no-cache' } });
      expect(revalidated.status, inm).to.equal(304);
      expect(revalidated.headers.get('etag')).to.equal(`"${claim.claimCid}"`);
      expect(await revalidated.text()).to.equal('');
    }
    const changed = await fetch(`${server.baseUrl}/v1/evidence/${claim.claimCid}`, { headers: { 'if-none-match': '"bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"' } });
    expect(changed.status).to.equal(200);
    expect(new Uint8Array(await changed.arrayBuffer())).to.deep.equal(bytes);
  });

  it('PUBLIC_BASE_URL unset is a start-up warning in production (not on PostgreSQL: instances share the database\'s URL), VALIDATOR_PRIVATE_KEY unset in production', async function () {
    // Three servers start and stop here, each loading its sealing thread: on a loaded CI machine that outlasts the default.
    this.timeout(60_000);
    const warnings = async (env: Record<string, string>) => {
      let logs = '';
      const logger = pino({ level: 'warn' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
      const started = await startTestServer(t.db, env, { logger });
      await started.stop();
      return ['PUBLIC_BASE_URL is not set', 'VALIDATOR_PRIVATE_KEY is not set'].filter((w) => logs.includes(w));
    };
    const production = { NODE_ENV: 'production', PIN_ENCRYPTION_KEY: '11'.repeat(32) };
    expect(await warnings(production)).to.deep.equal(['PUBLIC_BASE_URL is not set', 'VALIDATOR_PRIVATE_KEY is not set']);
    // The URL this database recorded (the first server's, without PUBLIC_BASE_URL).
    expect(await warnings({ ...production, PUBLIC_BASE_URL: `http://localhost:${server.config.PORT}`, VALIDATOR_PRIVATE_KEY: RFC8032_SECRET })).to.deep.equal([]);
    expect(await warnings({})).to.deep.equal([]);
  });

  it('the generated validator key survives a restart; earlier credentials stay verifiable', async () => {
    const before = (await verifiedClaim(server, key)).verifiableCredential!;
    const restarted = await startTestServer(t.open());
    try {
      const after = (await verifiedClaim(restarted, key)).verifiableCredential!;
      expect(after.issuer).to.equal(before.issuer);
      const res = await verifyCredential({ client: restarted.client, body: { verifiableCredential: before } });
      expect(res.data!.verified).to.equal(true);
    } finally {
      await restarted.stop();
    }
    const generated = await t.db('twin_validator_keys').where('origin', 'generated');
    expect(generated).to.have.length(1);
  });

  it('VALIDATOR_PRIVATE_KEY (hex or base64url) sets the issuer; credentials of the generated key still verify', async () => {
    const before = (await verifiedClaim(server, key)).verifiableCredential!;
    for (const seed of [RFC8032_SECRET, Buffer.from(RFC8032_SECRET, 'hex').toString('base64url')]) {
      const configured = await startTestServer(t.db, { VALIDATOR_PRIVATE_KEY: seed });
      try {
        const vc = (await verifiedClaim(configured, key)).verifiableCredential!;
        expect(vc.issuer).to.equal(rfc8032DidKey());
        expect(independentlyVerifies(vc)).to.equal(true);
        const old = await verifyCredential({ client: configured.client, body: { verifiableCredential: before } });
        expect(old.data!.verified).to.equal(true);
      } finally {
        await configured.stop();
      }
    }
  });

  /** The offline loader with the KPT context as this server serves it, under the URL credentials list. */
  const loaderWithKptContext = async (vc: VerifiableCredential) => {
    const res = await fetch(`${server.baseUrl}/v1/contexts/kpt-v1.jsonld`);
    expect(res.status).to.equal(200);
    expect(vc['@context'][1]).to.equal('https://w3id.org/hearth/kpt/v1');
    return offlineLoader({ [String(vc['@context'][1])]: await res.json() });
  };

  it("Digital Bazaar's eddsa-jcs-2022 verifier (data-integrity, jsonld-signatures, offline loader) accepts Hearth's credentials", async () => {
    for (let n = 0; n < 3; n++) {
      const vc = (await verifiedClaim(server, key)).verifiableCredential!;
      const result = await independentVerify(vc, await loaderWithKptContext(vc));
      expect(result.verified, String(result.error)).to.equal(true);
      // Changed after signing: refused.
      const changed = structuredClone(vc);
      changed.credentialSubject.totalFuelKg = 1;
      expect((await independentVerify(changed, await loaderWithKptContext(vc))).verified).to.equal(false);
    }
  });

  it("a credential Digital Bazaar's signer makes with a trusted key verifies at POST /v1/credentials/verify; with an untrusted key it is not trusted", async () => {
    const seed = Buffer.from(RFC8032_SECRET, 'hex');
    const did = await didKeyOfSeed(seed);
    expect(did).to.equal(rfc8032DidKey());
    const unsigned = {
      '@context': ['https://www.w3.org/ns/credentials/v2'],
      id: 'urn:uuid:0b6c7c0e-6a43-4c6b-8d0e-3c2f3f6d2b11',
      type: ['VerifiableCredential'],
      issuer: did,
      validFrom: '2026-01-01T00:00:00Z',
      credentialSubject: { id: 'did:ixo:entity:0000000000000000000000000000cccc' },
    };
    const signed = await independentSign(unsigned, seed);
    expect(signed.proof).to.include({ type: 'DataIntegrityProof', cryptosuite: 'eddsa-jcs-2022' });
    await t.db('twin_validator_keys').where('did', did).delete();
    expect((await verifyVc(signed)).checks.find((c) => c.check === 'trusted-issuer')).to.deep.include({ passed: false });
    await loadValidatorKey(t.db, RFC8032_SECRET);
    try {
      const res = await verifyVc(signed);
      expect(res, JSON.stringify(res.checks)).to.deep.include({ verified: true, issuer: did, trustedIssuer: true });
      const changed = await verifyVc({ ...signed, validFrom: '2026-01-02T00:00:00Z' });
      expect(changed.checks.find((c) => c.check === 'signature')).to.deep.include({ passed: false });
    } finally {
      await t.db('twin_validator_keys').where('did', did).delete();
    }
  });

  it('the proof carries the @context it was signed with; stored credentials without it are migrated and verify again', async () => {
    const claim = await verifiedClaim(server, key);
    const vc = claim.verifiableCredential!;
    expect(vc.proof['@context']).to.deep.equal(vc['@context']);
    // A credential as stored before migration 102: the same signature, no proof.@context.
    const { '@context': _c, ...oldProof } = vc.proof;
    const old = { ...vc, proof: oldProof };
    await t.db('kpt_claims').update({ verifiable_credential: JSON.stringify(old) }).where('id', claim.id);
    const refused = await verifyVc(old);
    expect(refused.verified).to.equal(false);
    // The defect a standard verifier saw: without proof.@context it hashes another proof configuration.
    expect((await independentVerify(old, await loaderWithKptContext(vc))).verified).to.equal(false);
    expect(refused.checks.find((c) => c.check === 'signature')!.message).to.match(/proof has no @context.*fetch it again/);
    await addProofContexts(t.db);
    const migrated = (await getClaim({ client: server.client, auth: key, path: { id: claim.id } })).data!.verifiableCredential!;
    expect(migrated.proof['@context']).to.deep.equal(vc['@context']);
    expect(migrated.proof.proofValue).to.equal(vc.proof.proofValue);
    expect((await verifyVc(migrated)).verified).to.equal(true);
    expect((await independentVerify(migrated, await loaderWithKptContext(migrated))).verified).to.equal(true);
  });

  it('a malformed VALIDATOR_PRIVATE_KEY stops start-up, a seed with a stray character too', async () => {
    for (const seed of ['abcd', `${'A'.repeat(43)}@`]) {
      let err: unknown;
      try {
        await startTestServer(t.db, { VALIDATOR_PRIVATE_KEY: seed });
      } catch (e) {
        err = e;
      }
      // A ConfigError, which start-up prints as it prints every bad variable: no stack.
      expect(err, seed).to.be.instanceOf(ConfigError);
      expect((err as Error).message, seed).to.match(/^Invalid configuration:\n {2}VALIDATOR_PRIVATE_KEY: must be an Ed25519 seed/);
    }
  });
});
