// The Hearth KPT JSON-LD context: one URL and the same bytes in every deployment, shipped in the
// repository and the SDK, served publicly, pinned by digest in every new credential, and enough
// for JSON-LD safe-mode expansion (the `jsonld` package) to keep every claim of the credential.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { base58btc } from 'multiformats/bases/base58';
import { Writable } from 'node:stream';
import pino from 'pino';
import { expect } from 'chai';
import jsonld from 'jsonld';
import type { VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { startTwinsHarness, type TwinsHarness, kptClaim } from './fixtures.ts';
import { independentVerify, offlineLoader } from './independent-verifier.ts';
import { submitClaim } from '../../generated/openapi/sdk.gen.ts';
import { startTestServer } from '../helpers/server.ts';

const ISSUE_TERMS = ['KPTCredential', 'KPTClaimRecord', 'Evidence', 'claimId', 'collectionId', 'testGroup', 'testPeriod', 'days', 'totalFuelKg', 'meanFuelKgPerDay', 'selectionDesign', 'selectionFrame', 'selectionDraw', 'evidenceType'];
const BASE_URL = 'https://hearth.example.org';
// Production start-up needs one (area B); any 32 bytes.
const PIN_KEY = '00'.repeat(32);
const CONTEXT_URL = 'https://w3id.org/hearth/kpt/v1';
const VOCAB = 'https://w3id.org/hearth/kpt#';
/** The copy an offline verifier bundles: the SDK's. */
const BUNDLED = readFileSync(new URL('../../sdk/contexts/kpt-v1.jsonld', import.meta.url));
/** A document loader that knows the standard contexts and, of Hearth's, only the bundled copy. */
const bundledLoader = () => offlineLoader({ [CONTEXT_URL]: JSON.parse(BUNDLED.toString('utf8')) });

forEachDatabase('KPT JSON-LD context', (t) => {
  let h: TwinsHarness;
  let served: { '@context': Record<string, any> };
  let servedBytes: Buffer;
  let vc: VerifiableCredential;
  before(async () => {
    h = await startTwinsHarness(t.db, { PUBLIC_BASE_URL: 'https://hearth.example.org/' });
    const res = await fetch(`${h.server.baseUrl}/v1/contexts/kpt-v1.jsonld`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/ld\+json/);
    servedBytes = Buffer.from(await res.arrayBuffer());
    served = JSON.parse(servedBytes.toString('utf8'));
    const period = { testPeriod: { startDate: '2026-09-01', endDate: '2026-09-03' } };
    await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim(period) });
    vc = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ ...period, testGroup: 'intervention' }) })).data!.verifiableCredential!;
  });
  after(() => h.server.stop());

  it('is public and served byte for byte as shipped in the repository and the SDK: no deployment URL in it', () => {
    const shipped = readFileSync(new URL('../../src/twins/credentials/contexts/kpt-v1.jsonld', import.meta.url));
    expect(servedBytes).to.deep.equal(shipped);
    expect(BUNDLED).to.deep.equal(shipped);
    expect(servedBytes.toString('utf8')).not.to.include('hearth.example.org');
    expect(served['@context']).to.include({ '@version': 1.1, '@protected': true });
  });

  it('defines every KPT term of the credential with an IRI of the one fixed vocabulary', async () => {
    const ctx = served['@context'];
    expect(ctx.kpt).to.equal(VOCAB);
    for (const term of ISSUE_TERMS) {
      const def = ctx[term];
      const id = typeof def === 'string' ? def : def?.['@id'];
      expect(id, term).to.equal(`kpt:${term}`);
    }
  });

  it('is listed in the credential @context after VC 2.0 under its fixed URL, and pinned by a relatedResource digest of its bytes', () => {
    expect(vc['@context']).to.deep.equal(['https://www.w3.org/ns/credentials/v2', CONTEXT_URL]);
    // multibase base58btc ('z') of the multihash: sha2-256 (0x12), 32 bytes (0x20), the digest.
    const multihash = Buffer.concat([Buffer.from([0x12, 0x20]), createHash('sha256').update(BUNDLED).digest()]);
    expect(vc.relatedResource).to.deep.equal([{ id: CONTEXT_URL, mediaType: 'application/ld+json', digestMultibase: base58btc.encode(multihash) }]);
  });

  it("Digital Bazaar's verifier accepts the credential with a document loader that has only the bundled copy of the context", async () => {
    const result = await independentVerify(vc, bundledLoader());
    expect(result.verified, String(result.error)).to.equal(true);
  });

  it('JSON-LD safe-mode expansion keeps every claim of the credential subject and evidence', async () => {
    const expanded = await jsonld.expand(structuredClone(vc), { documentLoader: bundledLoader(), safe: true } as any);
    const [doc] = expanded as any[];
    const kpt = (term: string) => `${VOCAB}${term}`;
    expect(doc['@type']).to.include(kpt('KPTCredential'));
    const subject = doc['https://www.w3.org/2018/credentials#credentialSubject'][0];
    expect(subject['@id']).to.equal(vc.credentialSubject.id);
    for (const term of ['claimId', 'collectionId', 'testGroup', 'testPeriod', 'days', 'totalFuelKg', 'meanFuelKgPerDay', 'selectionDesign', 'selectionFrame', 'selectionDraw']) {
      expect(subject[kpt(term)], term).to.be.an('array').with.length(1);
    }
    expect(subject[kpt('totalFuelKg')][0]['@value']).to.equal(vc.credentialSubject.totalFuelKg);
    expect(subject[kpt('selectionDraw')][0]['@id']).to.equal(vc.credentialSubject.selectionDraw);
    expect(subject[kpt('testPeriod')][0][kpt('startDate')][0]).to.deep.equal({ '@value': '2026-09-01', '@type': 'http://www.w3.org/2001/XMLSchema#date' });
    const evidence = doc['https://www.w3.org/2018/credentials#evidence'];
    expect(evidence[0]['@type']).to.deep.equal([kpt('Evidence'), kpt('KPTClaimRecord')]);
    expect(evidence[1][kpt('evidenceType')][0]['@value']).to.equal('selection-methodology');
    expect(doc['https://www.w3.org/2018/credentials#credentialStatus']).to.have.length(2);
    expect(doc['https://www.w3.org/2018/credentials#relatedResource'][0]['@id']).to.equal(CONTEXT_URL);
  });

  it('in production without PUBLIC_BASE_URL, start-up warns that credentials would name a local URL', async () => {
    for (const [env, warned] of [[{ NODE_ENV: 'production', PIN_ENCRYPTION_KEY: PIN_KEY }, true], [{ NODE_ENV: 'production', PIN_ENCRYPTION_KEY: PIN_KEY, PUBLIC_BASE_URL: BASE_URL }, false]] as const) {
      let logs = '';
      const logger = pino({ level: 'warn' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
      const server = await startTestServer(t.db, env, { logger });
      await server.stop();
      expect(logs.includes('PUBLIC_BASE_URL is not set'), JSON.stringify(env)).to.equal(warned);
    }
  });

  it('without the KPT context, safe mode refuses the credential (the terms would be dropped)', async () => {
    const bare = { ...structuredClone(vc), '@context': ['https://www.w3.org/ns/credentials/v2'] };
    let err: any;
    try {
      await jsonld.expand(bare, { documentLoader: offlineLoader(), safe: true } as any);
    } catch (e) {
      err = e;
    }
    expect(err?.name).to.equal('jsonld.ValidationError');
  });
});
