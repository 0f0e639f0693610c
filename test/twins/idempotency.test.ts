// Idempotency-Key on POST /v1/entities and POST /v1/collections (claims: claims.test.ts; the
// replayed answers of every creating POST: idempotent-replay.test.ts): a retry is answered what
// the first request was, another body with the key is 422, keys are per caller and operation and
// expire after 24 hours. SQLite and PostgreSQL.
import { expect } from 'chai';
import { createCollection, createEntity } from '../../generated/openapi/sdk.gen.ts';
import type { Problem } from '../../generated/openapi/types.gen.ts';
import { toAppError } from '../../src/platform/http/errors.ts';
import { EntityService } from '../../src/twins/entities/entities.service.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../src/twins/idempotency.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { PARTNER_DID, startTwinsHarness, twinsTableContents, type TwinsHarness } from './fixtures.ts';

forEachDatabase('Idempotency-Key on creating POSTs', (t) => {
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  const entity = (key: string | undefined, body: Record<string, unknown>, auth = h.key) =>
    createEntity({ client: h.server.client, auth, body: body as never, ...(key ? { headers: { 'Idempotency-Key': key } } : {}) });
  const collection = (key: string | undefined, body: { id: string; name: string }, auth = h.key) =>
    createCollection({ client: h.server.client, auth, body, ...(key ? { headers: { 'Idempotency-Key': key } } : {}) });

  it('POST /v1/entities: a retry with the key gets 201 and the first entity, marked; without a key a retry creates another', async () => {
    const body = { type: 'Stove', properties: { model: 'Jiko Poa' } };
    const first = await entity('ent-0001', body);
    expect(first.response.status).to.equal(201);
    const retry = await entity('ent-0001', { properties: { model: 'Jiko Poa' }, type: 'Stove' });
    expect(retry.response.status).to.equal(201);
    expect(retry.response.headers.get('idempotent-replayed')).to.equal('true');
    expectContractResponse('post', '/v1/entities', { status: 201, headers: retry.response.headers, body: retry.data });
    expect(retry.data).to.deep.equal(first.data);
    expect(retry.response.headers.get('location')).to.equal(`/v1/entities/${first.data!.did}`);
    const a = await entity(undefined, body);
    const b = await entity(undefined, body);
    expect([a.response.status, b.response.status]).to.deep.equal([201, 201]);
    expect(a.data!.did).not.to.equal(b.data!.did);
  });

  it('POST /v1/entities: 422 for the key with another body, storing nothing; keys are per caller', async () => {
    await entity('ent-0002', { type: 'Stove' });
    const before = await twinsTableContents(t.db);
    const reused = await entity('ent-0002', { type: 'Pot' });
    expect(reused.response.status).to.equal(422);
    expectContractResponse('post', '/v1/entities', { status: 422, headers: reused.response.headers, body: reused.error });
    expect((reused.error as Problem).errors![0]).to.include({ pointer: '/headers/idempotency-key', rule: 'idempotency-key-reuse' });
    expect(await twinsTableContents(t.db)).to.deep.equal(before);
    const other = await entity('ent-0002', { type: 'Pot' }, h.otherKey);
    expect(other.response.status).to.equal(201);
  });

  it('POST /v1/entities: concurrent requests with one key create one entity', async () => {
    const body = { type: 'ConcurrentStove' };
    const answers = await Promise.all([1, 2, 3, 4].map(() => entity('ent-0003', body)));
    expect(answers.map((a) => a.response.status)).to.deep.equal([201, 201, 201, 201]);
    expect(answers.map((a) => a.response.headers.get('idempotent-replayed')).sort()).to.deep.equal([null, 'true', 'true', 'true']);
    expect(new Set(answers.map((a) => a.data!.did)).size).to.equal(1);
    expect(await t.db('twin_entities').select('did').where('type', 'ConcurrentStove')).to.deep.equal([{ did: answers[0]!.data!.did }]);
  });

  it('POST /v1/collections: a retry with the key gets 201 and the collection, marked (409 without a key); 422 for another body', async () => {
    const first = await collection('col-0001', { id: 'idem-1', name: 'Idempotent' });
    expect(first.response.status).to.equal(201);
    const retry = await collection('col-0001', { id: 'idem-1', name: 'Idempotent' });
    expect(retry.response.status).to.equal(201);
    expect(retry.response.headers.get('idempotent-replayed')).to.equal('true');
    expectContractResponse('post', '/v1/collections', { status: 201, headers: retry.response.headers, body: retry.data });
    expect(retry.data).to.deep.equal(first.data);
    expect((await collection(undefined, { id: 'idem-1', name: 'Idempotent' })).response.status).to.equal(409);
    const before = await twinsTableContents(t.db);
    const reused = await collection('col-0001', { id: 'idem-2', name: 'Another' });
    expect(reused.response.status).to.equal(422);
    expectContractResponse('post', '/v1/collections', { status: 422, headers: reused.response.headers, body: reused.error });
    expect(await twinsTableContents(t.db)).to.deep.equal(before);
  });

  it('a key expires after 24 hours: then it may be bound to a new request', async () => {
    let now = new Date('2026-05-01T00:00:00.000Z');
    const service = new EntityService(t.db, () => now);
    const principal = { did: PARTNER_DID } as Parameters<EntityService['createOnce']>[0];
    const first = await service.createOnce(principal, { type: 'Kettle' }, 'ent-expiry');
    now = new Date(now.getTime() + IDEMPOTENCY_KEY_TTL_MS - 1);
    const stillBound = await service.createOnce(principal, { type: 'Pan' }, 'ent-expiry').then(() => undefined, (err: unknown) => err);
    expect(toAppError(stillBound)).to.include({ status: 422 });
    now = new Date(now.getTime() + 1);
    const afterExpiry = await service.createOnce(principal, { type: 'Pan' }, 'ent-expiry');
    expect(afterExpiry.replayed).to.equal(false);
    expect(afterExpiry.resourceId).not.to.equal(first.resourceId);
    const retry = await service.createOnce(principal, { type: 'Pan' }, 'ent-expiry');
    expect(retry).to.deep.equal({ ...afterExpiry, replayed: true });
  });
});
