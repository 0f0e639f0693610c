// The verifier's rules beyond the signature: the VC 2.0 data model (against Digital Bazaar's
// checks), proof dates (XML Schema dateTimeStamp), the credential's validity period, proof sets,
// and the XML date-time parser they rest on.
import { randomBytes } from 'node:crypto';
import { _checkCredential as checkCredentialIndependently } from '@digitalbazaar/vc';
import { expect } from 'chai';
import type { VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { CHECKS, signCredential, verifyCredential, type UnsignedCredential } from '../../src/twins/credentials/credentials.ts';
import { base58btc } from 'multiformats/bases/base58';
import { base58btcMaxLength, didKeyFromPublicKey, privateKeyFromSeed, rawPublicKey, type ValidatorKey } from '../../src/twins/credentials/validator-key.ts';
import { dateTimeStampMs } from '../../src/twins/credentials/xsd-datetime.ts';

function newKey(): ValidatorKey {
  const privateKey = privateKeyFromSeed(randomBytes(32));
  const did = didKeyFromPublicKey(rawPublicKey(privateKey));
  return { did, verificationMethod: `${did}#${did.slice('did:key:'.length)}`, privateKey };
}

const issuer = newKey();
const witness = newKey();
const NOW = new Date('2026-06-01T12:00:00Z');

const unsigned = (extra: Partial<UnsignedCredential> = {}): UnsignedCredential => ({
  '@context': ['https://www.w3.org/ns/credentials/v2'],
  type: ['VerifiableCredential'],
  issuer: issuer.did,
  validFrom: '2026-01-01T00:00:00Z',
  credentialSubject: { id: 'did:ixo:entity:0000000000000000000000000000cccc' },
  ...extra,
});

const verify = (vc: unknown, now = NOW) => verifyCredential(vc as Record<string, unknown>, { trusted: new Set([issuer.did]), now });
const failed = async (vc: unknown, now = NOW) => {
  const res = await verify(vc, now);
  expect(res.verified).to.equal(false);
  return res.checks.find((c) => !c.passed)!;
};

describe('credential verification rules', () => {
  it('a credential passes every check, in order', async () => {
    const res = await verify(signCredential(unsigned(), issuer));
    expect(res.verified).to.equal(true);
    expect(res.checks.map((c) => c.check)).to.deep.equal(CHECKS);
  });

  describe('proof.created and proof.expires are XML Schema dateTimeStamps', () => {
    for (const created of ['2026-02-30T00:00:00Z', '2026-01-01T00:00:00', '2026-01-01', 'yesterday', '2026-01-01T25:00:00Z', '2026-01-01T00:00:00+15:00', 1767225600]) {
      it(`refuses created ${JSON.stringify(created)}`, async () => {
        const vc = signCredential(unsigned(), issuer);
        const check = await failed({ ...vc, proof: { ...vc.proof, created } });
        expect(check.check).to.equal('proof-dates');
        expect(check.message).to.match(/proof\.created .* is not an XML Schema dateTimeStamp/);
      });
    }

    it('accepts other dateTimeStamp forms (offset, fractions) as dates: the signature then decides', async () => {
      const vc = signCredential(unsigned(), issuer);
      const res = await verify({ ...vc, proof: { ...vc.proof, created: '2026-01-01T02:00:00.125+02:00' } });
      expect(res.checks.find((c) => c.check === 'proof-dates')!.passed).to.equal(true);
      expect(res.checks.find((c) => !c.passed)!.check).to.equal('signature');
    });

    it('refuses a malformed or past proof.expires', async () => {
      const vc = signCredential(unsigned(), issuer);
      expect((await failed({ ...vc, proof: { ...vc.proof, expires: 'soon' } })).message).to.match(/proof\.expires/);
      expect((await failed({ ...vc, proof: { ...vc.proof, expires: '2026-05-01T00:00:00Z' } })).message).to.equal('the proof expired at 2026-05-01T00:00:00Z');
    });
  });

  describe('validFrom / validUntil', () => {
    it('refuses a credential before its validFrom and accepts it from then on', async () => {
      const vc = signCredential(unsigned({ validFrom: '2026-07-01T00:00:00Z' }), issuer);
      const check = await failed(vc);
      expect(check).to.deep.equal({ check: 'validity-period', passed: false, message: 'not valid before 2026-07-01T00:00:00Z' });
      expect((await verify(vc, new Date('2026-07-01T00:00:00Z'))).verified).to.equal(true);
    });

    it('refuses a credential after its validUntil', async () => {
      const vc = signCredential(unsigned({ validUntil: '2026-05-31T23:59:59Z' }), issuer);
      expect(await failed(vc)).to.deep.equal({ check: 'validity-period', passed: false, message: 'not valid after 2026-05-31T23:59:59Z' });
      expect((await verify(vc, new Date('2026-05-31T23:59:59Z'))).verified).to.equal(true);
    });

    it('refuses a validFrom or validUntil that is not a dateTimeStamp, even when signed', async () => {
      for (const extra of [{ validFrom: '2026-01-01' }, { validUntil: '2027-13-01T00:00:00Z' }]) {
        const check = await failed(signCredential(unsigned(extra), issuer));
        expect(check.check).to.equal('validity-period');
        expect(check.message).to.match(/is not an XML Schema dateTimeStamp/);
      }
    });
  });

  describe('proof sets', () => {
    /** The same document signed by each key: a proof set (Data Integrity section 2.1.2). */
    const proofSet = (doc: UnsignedCredential, ...keys: ValidatorKey[]) => ({ ...doc, proof: keys.map((k) => signCredential(doc, k).proof) });

    it('accepts a set whose every proof holds, one by the issuer', async () => {
      const res = await verify(proofSet(unsigned(), witness, issuer));
      expect(res.verified, JSON.stringify(res.checks)).to.equal(true);
    });

    it('refuses a set with one bad proof, naming it', async () => {
      const vc = proofSet(unsigned(), issuer, witness);
      vc.proof[1]!.proofValue = signCredential(unsigned({ validFrom: '2026-01-02T00:00:00Z' }), witness).proof.proofValue;
      const check = await failed(vc);
      expect(check.check).to.equal('signature');
      expect(check.message).to.match(/^proof\[1\]: the signature does not match/);
    });

    it('refuses a set without a proof by the issuer', async () => {
      const check = await failed(proofSet(unsigned(), witness, newKey()));
      expect(check.check).to.equal('issuer-match');
    });

    it('refuses an empty set, a set holding a non-object, and proof chains (previousProof)', async () => {
      expect((await failed({ ...unsigned(), proof: [] })).check).to.equal('shape');
      const vc = signCredential(unsigned(), issuer);
      expect((await failed({ ...vc, proof: [vc.proof, 'x'] })).check).to.equal('shape');
      const chained = { ...vc, proof: [{ ...vc.proof, id: 'urn:p1' }, { ...signCredential(unsigned(), witness).proof, previousProof: 'urn:p1' }] };
      expect(await failed(chained)).to.deep.include({ check: 'cryptosuite', message: 'proof[1]: proof chains (previousProof) are not supported; a proof set is' });
    });
  });

  describe('the VC 2.0 data model (section 4): the shape check agrees with Digital Bazaar\'s @digitalbazaar/vc', () => {
    /** Whether @digitalbazaar/vc's credential checks (all but the proof's) accept the document, and why not. */
    const independent = (credential: object): string | undefined => {
      try {
        checkCredentialIndependently({ credential, now: NOW });
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    };
    const subject = { id: 'did:ixo:entity:0000000000000000000000000000cccc', fuelKg: 7.5 };
    const cases: [string, Partial<UnsignedCredential> | Record<string, unknown>, boolean][] = [
      ['as issued', {}, true],
      ['type as one string', { type: 'VerifiableCredential' }, true],
      ['issuer as an object', { issuer: { id: issuer.did, name: 'Hearth' } }, true],
      ['several subjects', { credentialSubject: [subject, { id: 'https://example.org/h/2', fuelKg: 3 }] }, true],
      ['typed evidence with a URL id', { evidence: [{ id: 'ipfs://bafkreiabc', type: ['Evidence'] }] }, true],
      ['a typed status entry', { credentialStatus: { id: 'https://example.org/status/0#3', type: 'BitstringStatusListEntry' } }, true],
      ['type without VerifiableCredential', { type: ['KPTCredential'] }, false],
      ['no type', { type: undefined }, false],
      ['no credentialSubject', { credentialSubject: undefined }, false],
      ['an empty credentialSubject', { credentialSubject: {} }, false],
      ['a subject that is not an object', { credentialSubject: 'household 42' }, false],
      ['an empty subject among several', { credentialSubject: [subject, {}] }, false],
      ['a subject id that is not a URL', { credentialSubject: { id: 'household 42', fuelKg: 7.5 } }, false],
      ['an issuer that is not a URL', { issuer: 'household 42' }, false],
      ['an issuer object without an id', { issuer: { name: 'Hearth' } }, false],
      ['evidence without a type', { evidence: [{ id: 'ipfs://bafkreiabc' }] }, false],
      ['evidence whose id is not a URL', { evidence: { id: 'photo 1', type: 'Evidence' } }, false],
      ['a status entry without a type', { credentialStatus: { id: 'https://example.org/status/0#3' } }, false],
      ['a status entry whose id is not a URL', { credentialStatus: { id: 'list 0 bit 3', type: 'BitstringStatusListEntry' } }, false],
      ['empty termsOfUse', { termsOfUse: {} }, false],
    ];
    for (const [name, change, valid] of cases) {
      it(`${valid ? 'accepts' : 'refuses'} ${name}`, async () => {
        const doc = JSON.parse(JSON.stringify({ ...unsigned({ credentialSubject: subject }), ...change })) as UnsignedCredential;
        const refusal = independent(doc);
        if (valid) expect(refusal, 'Digital Bazaar').to.equal(undefined);
        else expect(refusal, 'Digital Bazaar').to.be.a('string');
        const res = await verify(signCredential(doc, issuer));
        expect(res.checks[0]!.check).to.equal('shape');
        expect(res.checks[0]!.passed, res.checks[0]!.message).to.equal(valid);
        if (valid) expect(res.verified, JSON.stringify(res.checks)).to.equal(true);
      });
    }

    it('also refuses a credential id that is not a URL (section 4.4), which @digitalbazaar/vc does not check', async () => {
      const res = await verify(signCredential({ ...unsigned(), id: 'kpt_123' }, issuer));
      expect(res.checks[0]).to.deep.equal({ check: 'shape', passed: false, message: 'not a VC 2.0 verifiable credential: id must be a URL' });
    });
  });

  it('refuses a proof whose @context is not a prefix of the document', async () => {
    const vc: VerifiableCredential = signCredential(unsigned(), issuer);
    const check = await failed({ ...vc, proof: { ...vc.proof, '@context': ['https://www.w3.org/ns/credentials/v2', 'https://example.org/x'] } });
    expect(check).to.deep.include({ check: 'signature', message: "the document's @context does not start with the proof's @context" });
  });

  describe('multibase text longer than its key or signature is refused before decoding (base58 decoding is quadratic: 95,000 characters held the event loop 8 s)', () => {
    it('the bounds hold every Ed25519 signature and did:key, from all-zero to all-0xff bytes', () => {
      for (const fill of [0x00, 0x01, 0x80, 0xff]) {
        expect(base58btc.encode(new Uint8Array(64).fill(fill)).length).to.be.at.most(base58btcMaxLength(64));
        expect(didKeyFromPublicKey(new Uint8Array(32).fill(fill)).length - 'did:key:'.length).to.be.at.most(base58btcMaxLength(34));
      }
    });

    it('a 200,000-character proofValue or did:key fails its check without being decoded', async () => {
      const vc: VerifiableCredential = signCredential(unsigned(), issuer);
      // What reached the decoder, by length: the verifier and this test share the one base58btc codec.
      const decoded: number[] = [];
      const decode = base58btc.decode.bind(base58btc);
      base58btc.decode = (text: string) => {
        decoded.push(text.length);
        return decode(text);
      };
      try {
        const signature = await failed({ ...vc, proof: { ...vc.proof, proofValue: `z${'2'.repeat(200_000)}` } });
        expect(signature).to.deep.include({ check: 'signature', message: 'proofValue is not multibase base58btc' });
        const longKey = `did:key:z${'2'.repeat(200_000)}`;
        expect((await verify({ ...vc, issuer: longKey, proof: { ...vc.proof, verificationMethod: `${longKey}#k` } })).verified).to.equal(false);
        expect((await verify(vc)).verified, 'the codec is the one the verifier decodes with').to.equal(true);
      } finally {
        Reflect.deleteProperty(base58btc, 'decode');
      }
      expect(decoded, 'the signature and did:key of the valid credential were decoded').to.not.have.length(0);
      expect(decoded.filter((n) => n > base58btcMaxLength(64)), 'text longer than any key or signature was decoded').to.deep.equal([]);
    });
  });

  it('dateTimeStampMs: offsets, fractions, 24:00:00, leap days; undefined for anything else', () => {
    expect(dateTimeStampMs('2026-01-01T00:00:00Z')).to.equal(Date.UTC(2026, 0, 1));
    expect(dateTimeStampMs('2026-01-01T02:30:00+02:30')).to.equal(Date.UTC(2026, 0, 1));
    expect(dateTimeStampMs('2025-12-31T19:00:00.5-05:00')).to.equal(Date.UTC(2026, 0, 1) + 500);
    expect(dateTimeStampMs('2025-12-31T24:00:00Z')).to.equal(Date.UTC(2026, 0, 1));
    expect(dateTimeStampMs('2024-02-29T00:00:00Z')).to.equal(Date.UTC(2024, 1, 29));
    for (const bad of ['2025-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-01-01T00:00:60Z', '2026-01-01T24:00:01Z', '2026-01-01T00:00Z', '2026-01-01 00:00:00Z', '+2026-01-01T00:00:00Z', null]) {
      expect(dateTimeStampMs(bad), String(bad)).to.equal(undefined);
    }
  });
});
