// The published W3C vc-di-eddsa eddsa-jcs-2022 test vectors (vendored in vectors/vc-di-eddsa,
// see its SOURCE.md) through Hearth's signer and verifier.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { base58btc } from 'multiformats/bases/base58';
import { jcs, signCredential, verifyProof, type UnsignedCredential } from '../../src/twins/credentials/credentials.ts';
import { didKeyFromPublicKey, privateKeyFromSeed, publicKeyFromDidKey, publicKeyFromRaw, rawPublicKey, type ValidatorKey } from '../../src/twins/credentials/validator-key.ts';

const dir = new URL('./vectors/vc-di-eddsa/', import.meta.url);
const text = (name: string) => readFileSync(new URL(name, dir), 'utf8');
const json = (name: string) => JSON.parse(text(name));
const sha256hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

const keyPair = json('keyPair.json') as { publicKeyMultibase: string; privateKeyMultibase: string };
const signed = json('eddsa-jcs-2022/signedJCS.json');
const { proof: signedProof, ...unsigned } = signed;
const proofConfig = json('eddsa-jcs-2022/proofConfigJCS.json');
const created = new Date(proofConfig.created);

/** The vectors' key: the private multikey is ed25519-priv (0x8026) + the 32-byte seed. */
function vectorKey(verificationMethod?: string): ValidatorKey {
  const priv = base58btc.decode(keyPair.privateKeyMultibase);
  expect([...priv.slice(0, 2)]).to.deep.equal([0x80, 0x26]);
  const privateKey = privateKeyFromSeed(Buffer.from(priv.slice(2)));
  const did = didKeyFromPublicKey(rawPublicKey(privateKey));
  return { did, verificationMethod: verificationMethod ?? `${did}#${did.slice('did:key:'.length)}`, privateKey };
}

describe('W3C vc-di-eddsa eddsa-jcs-2022 test vectors', () => {
  it('the key pair: our did:key of the private key is the published public multikey', () => {
    expect(vectorKey().did).to.equal(`did:key:${keyPair.publicKeyMultibase}`);
  });

  it('canonDocJCS and docHashJCS: JCS of the unsigned credential and its SHA-256', () => {
    expect(jcs(unsigned)).to.equal(text('eddsa-jcs-2022/canonDocJCS.txt'));
    expect(sha256hex(jcs(unsigned))).to.equal(text('eddsa-jcs-2022/docHashJCS.txt'));
  });

  it('signedJCS, sigHexJCS, proofConfigJCS: our signer reproduces the signed credential byte for byte', () => {
    const ours = signCredential(unsigned as UnsignedCredential, vectorKey(proofConfig.verificationMethod), created);
    const { proofValue, ...options } = ours.proof;
    expect(options).to.deep.equal(proofConfig);
    expect(JSON.stringify(ours, null, 2)).to.equal(text('eddsa-jcs-2022/signedJCS.json'));
    expect(Buffer.from(base58btc.decode(proofValue)).toString('hex')).to.equal(text('eddsa-jcs-2022/sigHexJCS.txt'));
  });

  it('proofCanonJCS, proofHashJCS, combinedHashJCS (did:key generation): our signer hashes that proof configuration', () => {
    const ours = signCredential(unsigned as UnsignedCredential, vectorKey(), created);
    const { proofValue: _v, ...options } = ours.proof;
    expect(jcs(options)).to.equal(text('eddsa-jcs-2022/proofCanonJCS.txt'));
    expect(sha256hex(jcs(options))).to.equal(text('eddsa-jcs-2022/proofHashJCS.txt'));
    expect(sha256hex(jcs(options)) + sha256hex(jcs(unsigned))).to.equal(text('eddsa-jcs-2022/combinedHashJCS.txt'));
  });

  it('our verifier (section 3.3.2) accepts the published signed credential with the published public key', () => {
    const publicKey = publicKeyFromRaw(publicKeyFromDidKey(`did:key:${keyPair.publicKeyMultibase}`)!);
    expect(verifyProof(unsigned, signedProof, publicKey)).to.deep.equal({ ok: true });
  });

  it("our verifier refuses it changed, without the proof's @context, or with a proof @context that is not the document's prefix", () => {
    const publicKey = publicKeyFromRaw(publicKeyFromDidKey(`did:key:${keyPair.publicKeyMultibase}`)!);
    expect(verifyProof({ ...unsigned, name: 'Alumni Credentia1' }, signedProof, publicKey).ok).to.equal(false);
    const { '@context': _c, ...noContext } = signedProof;
    expect(verifyProof(unsigned, noContext, publicKey)).to.deep.include({ ok: false });
    const other = verifyProof(unsigned, { ...signedProof, '@context': ['https://www.w3.org/ns/credentials/v2', 'https://example.org/other/v1'] }, publicKey);
    expect(other).to.deep.equal({ ok: false, message: "the document's @context does not start with the proof's @context" });
    // A document that adds a context after the signed prefix still verifies (section 3.3.2 step 4.2).
    expect(verifyProof({ ...unsigned, '@context': [...unsigned['@context'], 'https://example.org/more/v1'] }, signedProof, publicKey)).to.deep.equal({ ok: true });
  });
});
