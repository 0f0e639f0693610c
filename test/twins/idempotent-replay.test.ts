// Idempotent replay on every creating POST of area A (entities, collections, draws, claims): a
// retry with the first request's Idempotency-Key and body is answered that request's status and
// body byte for byte, with Location and `Idempotent-Replayed: true`, even after the resource
// changed; the key sent for another body or collection is 422; keys bound before answers were
// kept (a database migrated by earlier code) replay the resource as it is, as 201. SQLite and
// PostgreSQL.
import { expect } from 'chai';
import { getClaim } from '../../generated/openapi/sdk.gen.ts';
import type { Problem } from '../../generated/openapi/types.gen.ts';
import { requestHash } from '../../src/twins/idempotency.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { householdDid, kptClaim, PARTNER_DID, startTwinsHarness, twinsTableContents, type TwinsHarness } from './fixtures.ts';

interface RawAnswer {
  status: number;
  text: string;
  location: string | null;
  replayed: string | null;
  headers: Headers;
}

forEachDatabase('Idempotent replay of creating POSTs', (t) => {
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  /** A request as bytes in and out: a replay must be the first answer byte for byte. */
  const send = async (method: string, path: string, body: unknown, key?: string): Promise<RawAnswer> => {
    const res = await fetch(`${h.server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text(), location: res.headers.get('location'), replayed: res.headers.get('idempotent-replayed'), headers: res.headers };
  };

  /** The first answer and a retry's; both checked against the contract, the retry against the first. */
  const firstAndReplay = async (template: string, path: string, body: unknown, key: string, between?: (first: RawAnswer) => Promise<void>) => {
    const first = await send('POST', path, body, key);
    expect(first.status, first.text).to.equal(201);
    expect(first.replayed).to.equal(null);
    expectContractResponse('post', template, { status: first.status, headers: first.headers, body: JSON.parse(first.text) });
    await between?.(first);
    const retry = await send('POST', path, body, key);
    expectContractResponse('post', template, { status: retry.status, headers: retry.headers, body: JSON.parse(retry.text) });
    expect({ status: retry.status, text: retry.text, location: retry.location, replayed: retry.replayed }).to.deep.equal({ status: 201, text: first.text, location: first.location, replayed: 'true' });
    return first;
  };

  it('POST /v1/entities: 201, the first body byte for byte and the marker, though the entity changed since', async () => {
    const first = await firstAndReplay('/v1/entities', '/v1/entities', { type: 'Stove', properties: { model: 'Jiko Poa' } }, 'replay-ent-1', async (created) => {
      const did = (JSON.parse(created.text) as { did: string }).did;
      const patched = await send('PATCH', `/v1/entities/${did}`, { properties: { model: 'Jiko Poa 2' } });
      expect(patched.status).to.equal(200);
    });
    expect(JSON.parse(first.text)).to.deep.include({ properties: { model: 'Jiko Poa' } });
  });

  it('POST /v1/collections: 201, the first body and the marker, though its submitters changed since', async () => {
    await firstAndReplay('/v1/collections', '/v1/collections', { id: 'replay-col-1', name: 'Replayed' }, 'replay-col-1', async () => {
      expect((await send('PATCH', '/v1/collections/replay-col-1', { openToAll: true })).status).to.equal(200);
    });
  });

  it('POST /v1/webhooks: 201 and the first answer with its secret (the answer a lost response lost), though the subscription was disabled since', async () => {
    // A public address by its literal (no name to resolve); disabled, then deleted, before any event could go to it.
    const body = { url: 'https://8.8.8.8/hearth-replay', eventTypes: ['draw.published'] };
    const first = await firstAndReplay('/v1/webhooks', '/v1/webhooks', body, 'replay-webhook-1', async (created) => {
      const id = (JSON.parse(created.text) as { id: string }).id;
      expect((await send('PATCH', `/v1/webhooks/${id}`, { enabled: false })).status).to.equal(200);
    });
    const created = JSON.parse(first.text) as { id: string; secret: string; enabled: boolean };
    expect(created).to.include({ enabled: true });
    expect(created.secret).to.match(/^whsec_/);
    const other = await send('POST', '/v1/webhooks', { ...body, eventTypes: ['claim.created'] }, 'replay-webhook-1');
    expect(other.status).to.equal(422);
    expectContractResponse('post', '/v1/webhooks', { status: 422, headers: other.headers, body: JSON.parse(other.text) });
    const res = await fetch(`${h.server.baseUrl}/v1/webhooks/${created.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${h.key}` } });
    expect(res.status).to.equal(204);
    expect((await t.db('twin_webhook_subscriptions').where('id', created.id)).length, 'one subscription made, and deleted').to.equal(0);
  });

  it('POST /v1/collections/{id}/draws: 201, the committed draw as first answered though it was revealed since; another collection with the key is 422', async () => {
    const design = { type: 'simple-random', frame: 'Register', procedure: 'Hearth draws' };
    for (const id of ['replay-draw-1', 'replay-draw-2']) expect((await send('POST', '/v1/collections', { id, name: id, selectionDesign: design })).status).to.equal(201);
    const body = { frame: [{ household: householdDid() }, { household: householdDid() }, { household: householdDid() }], sampleSize: 2 };
    const first = await firstAndReplay('/v1/collections/{id}/draws', '/v1/collections/replay-draw-1/draws', body, 'replay-draw-1', async (created) => {
      const drawId = (JSON.parse(created.text) as { id: string }).id;
      expect((await send('POST', `/v1/collections/replay-draw-1/draws/${drawId}/reveal`, undefined)).status).to.equal(200);
    });
    expect(JSON.parse(first.text)).to.include({ status: 'committed' });
    const before = await twinsTableContents(t.db);
    const elsewhere = await send('POST', '/v1/collections/replay-draw-2/draws', body, 'replay-draw-1');
    expect(elsewhere.status).to.equal(422);
    expectContractResponse('post', '/v1/collections/{id}/draws', { status: 422, headers: elsewhere.headers, body: JSON.parse(elsewhere.text) });
    expect((JSON.parse(elsewhere.text) as Problem).errors![0]).to.include({ pointer: '/headers/idempotency-key', rule: 'idempotency-key-reuse' });
    expect(await twinsTableContents(t.db)).to.deep.equal(before);
    // Without a key, the same body is another draw.
    expect((await send('POST', '/v1/collections/replay-draw-2/draws', body)).status).to.equal(201);
  });

  it('POST /v1/claims: 201 and the pending claim first answered, though its partner verified it since', async () => {
    const household = householdDid();
    const first = await firstAndReplay('/v1/claims', '/v1/claims', kptClaim({ householdId: household }), 'replay-claim-1', async () => {
      expect((await send('POST', '/v1/claims', kptClaim({ testGroup: 'intervention' }))).status).to.equal(201);
    });
    const claim = JSON.parse(first.text) as { id: string; status: string };
    expect(claim.status).to.equal('pending');
    expect((await getClaim({ client: h.server.client, auth: h.key, path: { id: claim.id } })).data!.status).to.equal('verified');
  });

  it('POST /v1/claims: a key first sent with an identical resubmission replays its 200 and body, marked', async () => {
    const body = kptClaim();
    expect((await send('POST', '/v1/claims', body)).status).to.equal(201);
    const first = await send('POST', '/v1/claims', body, 'replay-claim-2');
    expect([first.status, first.replayed]).to.deep.equal([200, null]);
    const retry = await send('POST', '/v1/claims', body, 'replay-claim-2');
    expectContractResponse('post', '/v1/claims', { status: retry.status, headers: retry.headers, body: JSON.parse(retry.text) });
    expect({ status: retry.status, text: retry.text, replayed: retry.replayed }).to.deep.equal({ status: 200, text: first.text, replayed: 'true' });
  });

  it('concurrent retries with one key: one creation, every other answer its replay', async () => {
    const answers = await Promise.all([1, 2, 3, 4].map(() => send('POST', '/v1/entities', { type: 'RacingStove' }, 'replay-race')));
    expect(answers.map((a) => a.status)).to.deep.equal([201, 201, 201, 201]);
    expect(answers.filter((a) => a.replayed === null)).to.have.length(1);
    expect(new Set(answers.map((a) => a.text)).size).to.equal(1);
  });

  describe('keys bound before answers were kept (a database migrated by earlier code)', () => {
    it('an entity key replays the entity as it is now, as 201, marked', async () => {
      const created = await send('POST', '/v1/entities', { type: 'OldStove' });
      const did = (JSON.parse(created.text) as { did: string }).did;
      await t.db('twins_idempotency_keys').insert({
        principal_did: PARTNER_DID, operation: 'createEntity', idempotency_key: 'legacy-ent', request_hash: requestHash({ type: 'OldStove' }),
        resource_id: did, created_at: new Date().toISOString(),
      });
      const retry = await send('POST', '/v1/entities', { type: 'OldStove' }, 'legacy-ent');
      expect({ status: retry.status, replayed: retry.replayed, location: retry.location }).to.deep.equal({ status: 201, replayed: 'true', location: `/v1/entities/${did}` });
      expect(retry.text).to.equal((await send('GET', `/v1/entities/${did}`, undefined)).text);
    });

    it('a claim key replays the claim as it is now, as 201, marked', async () => {
      const body = kptClaim();
      const created = await send('POST', '/v1/claims', body);
      const id = (JSON.parse(created.text) as { id: string }).id;
      await t.db('kpt_idempotency_keys').insert({ principal_did: PARTNER_DID, idempotency_key: 'legacy-claim', claim_id: id, created_at: new Date().toISOString() });
      const retry = await send('POST', '/v1/claims', body, 'legacy-claim');
      expect({ status: retry.status, replayed: retry.replayed, location: retry.location }).to.deep.equal({ status: 201, replayed: 'true', location: `/v1/claims/${id}` });
      expect(retry.text).to.equal((await send('GET', `/v1/claims/${id}`, undefined)).text);
    });
  });
});
