// The claim sealer: seals made on its thread are byte for byte the seals made in place, and
// sealing goes on in place before the thread has loaded, after it fails and after close.
import { randomBytes } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import { sealClaim, sealCredential, type CredentialInput, type NormalisedClaim, type SealInput } from '../../src/twins/claims/claim-seal.ts';
import { ClaimSealer, REPLY_SIZE } from '../../src/twins/claims/claim-sealer.ts';
import { verifyCredential } from '../../src/twins/credentials/credentials.ts';
import { didKeyFromPublicKey, privateKeyFromSeed, rawPublicKey, type ValidatorKey } from '../../src/twins/credentials/validator-key.ts';
import { kptClaim } from './fixtures.ts';

function validatorKey(): ValidatorKey {
  const privateKey = privateKeyFromSeed(randomBytes(32));
  const did = didKeyFromPublicKey(rawPublicKey(privateKey));
  return { did, verificationMethod: `${did}#${did.slice('did:key:'.length)}`, privateKey };
}

const SELECTION = { design: 'simple-random', frame: 'The programme register', drawId: 'drw_0123456789abcdef0123456789abcdef' } as const;

function sealInput(n: number, withCredential = true): SealInput {
  const claim = { ...kptClaim({ testGroup: n % 2 ? 'intervention' : 'reference' }), collectionId: `collection-${n}` } as NormalisedClaim;
  return { id: `kpt_${randomBytes(16).toString('hex')}`, claim, submittedBy: 'did:ixo:entity:0000000000000000000000000000aaaa', at: new Date(Date.UTC(2026, 2, 5, 0, 0, n)).toISOString(), withCredential, selection: SELECTION, issuance: { base: 'https://hearth.example.org', statusIndex: n } };
}

/** The sealer's thread, which is private: reached from outside, a crash or a failed send looks to the sealer as it would in use. */
const threadOf = (sealer: ClaimSealer) => (sealer as unknown as { worker: Pick<Worker, 'postMessage' | 'terminate' | 'on'> }).worker;

describe('claim sealer', function () {
  this.timeout(30_000);
  const key = validatorKey();
  let sealer: ClaimSealer;
  let failures: Error[];

  beforeEach(() => {
    failures = [];
    sealer = new ClaimSealer(async () => key, (err) => failures.push(err));
  });
  afterEach(() => sealer.close());

  it('seals on its thread exactly what sealing in place gives, and the credentials verify', async () => {
    await sealer.whenReady();
    expect(sealer.onThread).to.equal(true);
    const inputs = Array.from({ length: 40 }, (_, n) => sealInput(n, n % 5 !== 0));
    const seals = await Promise.all(inputs.map((input) => sealer.seal(input)));
    for (const [n, seal] of seals.entries()) {
      expect(seal).to.deep.equal(sealClaim(inputs[n]!, key));
      expect(seal.canonical).to.include(inputs[n]!.id);
      if (n % 5 === 0) {
        expect(seal.credential).to.equal(undefined);
        continue;
      }
      const vc = JSON.parse(seal.credential!.verifiableCredential);
      expect(vc.credentialSubject.claimId).to.equal(inputs[n]!.id);
      expect(vc.credentialSubject).to.include({
        selectionDesign: 'simple-random',
        selectionFrame: 'The programme register',
        selectionDraw: `https://hearth.example.org/v1/collections/collection-${n}/draws/${SELECTION.drawId}`,
      });
      expect(vc.credentialStatus[0].statusListIndex).to.equal(String(n));
      expect((await verifyCredential(vc, { trusted: new Set([key.did]), now: new Date('2026-04-01T00:00:00Z') })).verified).to.equal(true);
    }
    expect(failures).to.deep.equal([]);
  });

  it('signs on its thread the credential of a claim verified later exactly as in place, and it verifies', async () => {
    await sealer.whenReady();
    const credentials: CredentialInput[] = Array.from({ length: 10 }, (_, n) => {
      const input = sealInput(n);
      return { claimId: input.id, claimCid: sealClaim(input, key).claimCid, body: input.claim, now: '2026-03-09T10:00:00.000Z', selection: SELECTION, issuance: input.issuance };
    });
    const sealed = await Promise.all(credentials.map((c) => sealer.sealCredential(c)));
    expect(sealer.onThread).to.equal(true);
    for (const [n, credential] of sealed.entries()) {
      expect(credential).to.deep.equal(sealCredential(credentials[n]!, key));
      const vc = JSON.parse(credential.verifiableCredential);
      expect([vc.credentialSubject.claimId, vc.validFrom]).to.deep.equal([credentials[n]!.claimId, '2026-03-09T10:00:00.000Z']);
      expect((await verifyCredential(vc, { trusted: new Set([key.did]), now: new Date('2026-04-01T00:00:00Z') })).verified).to.equal(true);
    }
  });

  it('the seals asked for in one turn of the event loop go to the thread in one message, answered REPLY_SIZE a message, and each caller gets its own', async () => {
    await sealer.whenReady();
    const worker = threadOf(sealer);
    const answered: number[] = [];
    worker.on('message', (reply: unknown) => Array.isArray(reply) && answered.push(reply.length));
    const sent: number[] = [];
    const postMessage = worker.postMessage.bind(worker);
    worker.postMessage = (batch) => {
      sent.push(batch.length);
      postMessage(batch);
    };
    const inputs = Array.from({ length: 12 }, (_, n) => sealInput(n));
    const seals = await Promise.all(inputs.map((input) => sealer.seal(input)));
    seals.forEach((seal, n) => expect(seal).to.deep.equal(sealClaim(inputs[n]!, key)));
    expect(sent).to.deep.equal([12]);
    expect(answered).to.deep.equal([REPLY_SIZE, REPLY_SIZE, 12 - 2 * REPLY_SIZE]);
    const later = sealInput(40);
    expect(await sealer.seal(later)).to.deep.equal(sealClaim(later, key));
    expect(sent).to.deep.equal([12, 1]);
  });

  it('a message the thread cannot be sent is sealed in place, and the thread goes on', async () => {
    await sealer.whenReady();
    const worker = threadOf(sealer);
    const postMessage = worker.postMessage.bind(worker);
    worker.postMessage = () => {
      worker.postMessage = postMessage;
      throw new DOMException('could not be cloned', 'DataCloneError');
    };
    const inputs = Array.from({ length: 3 }, (_, n) => sealInput(n));
    const seals = await Promise.all(inputs.map((input) => sealer.seal(input)));
    seals.forEach((seal, n) => expect(seal).to.deep.equal(sealClaim(inputs[n]!, key)));
    expect(sealer.onThread).to.equal(true);
    const later = sealInput(41);
    expect(await sealer.seal(later)).to.deep.equal(sealClaim(later, key));
    expect(failures).to.deep.equal([]);
  });

  it('seals in place until the thread has loaded', async () => {
    const input = sealInput(1);
    const seal = await sealer.seal(input);
    expect(sealer.onThread).to.equal(false);
    expect(seal).to.deep.equal(sealClaim(input, key));
  });

  it('a seal the thread cannot make fails as it would in place', async () => {
    await sealer.whenReady();
    const input = sealInput(2);
    (input.claim.fuelMeasurements as { total: unknown }).total = 10n;
    let inPlace: unknown;
    try {
      sealClaim(input, key);
    } catch (err) {
      inPlace = err;
    }
    expect(inPlace).to.be.instanceOf(TypeError);
    let threaded: unknown;
    await sealer.seal(input).catch((err) => (threaded = err));
    expect(threaded).to.be.instanceOf(TypeError);
    expect(String(threaded)).to.equal(String(inPlace));
    expect(sealer.onThread, 'one bad input does not stop the thread').to.equal(true);
  });

  it('when the thread dies, seals in flight and later ones are made in place, and the failure is told once', async () => {
    await sealer.whenReady();
    const inputs = Array.from({ length: 30 }, (_, n) => sealInput(n));
    const inFlight = inputs.map((input) => sealer.seal(input));
    await threadOf(sealer).terminate();
    const seals = await Promise.all(inFlight);
    seals.forEach((seal, n) => expect(seal).to.deep.equal(sealClaim(inputs[n]!, key)));
    expect(sealer.onThread).to.equal(false);
    expect(failures).to.have.length(1);
    expect(failures[0]!.message).to.match(/exited/);
    const later = sealInput(99);
    expect(await sealer.seal(later)).to.deep.equal(sealClaim(later, key));
  });

  it('after close it seals in place and starts no thread', async () => {
    await sealer.whenReady();
    await sealer.close();
    expect(sealer.onThread).to.equal(false);
    const input = sealInput(3);
    expect(await sealer.seal(input)).to.deep.equal(sealClaim(input, key));
    await sealer.whenReady().then(
      () => expect.fail('a closed sealer started its thread'),
      (err: Error) => expect(err.message).to.match(/closed/),
    );
    expect(failures).to.deep.equal([]);
  });
});
