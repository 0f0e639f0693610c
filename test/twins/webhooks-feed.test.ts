// The change feed (GET /v1/events): the outbox written in each change's transaction, paged in
// commit order and scoped to the caller's principal.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { changeCredentialStatus, createCollection, createDraw, listEvents, revealDraw, submitClaim } from '../../generated/openapi/sdk.gen.ts';
import type { EventType } from '../../generated/openapi/types.gen.ts';
import { createTestKey } from '../helpers/server.ts';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { openEventWrites, recordEvents } from '../../src/twins/events/events.repository.ts';
import { drawPublished } from '../../src/twins/events/events.ts';
import { WebhookRepository } from '../../src/twins/events/webhooks.repository.ts';
import { encodeCursor } from '../../src/twins/paging.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createFramedCollection, kptClaim, PARTNER_DID, startTwinsHarness, type TwinsHarness } from './fixtures.ts';

const CLAIM_TYPES: EventType[] = ['claim.created', 'claim.verified', 'claim.rejected', 'credential.revoked', 'credential.suspended', 'credential.reinstated'];

forEachDatabase('change feed', (t) => {
  let h: TwinsHarness;
  let revokeKey: string;
  before(async () => {
    h = await startTwinsHarness(t.db, { WEBHOOK_POLL_MS: '0' });
    revokeKey = await createTestKey(t.db, { principalDid: PARTNER_DID, scopes: ['credentials:revoke'] });
  });
  after(() => h.server.stop());

  const feed = async (key: string, query: { after?: string; limit?: number; types?: EventType[] } = {}) => {
    const r = await listEvents({ client: h.server.client, auth: key, query });
    expect(r.response.status, JSON.stringify(r.error)).to.equal(200);
    expectContractResponse('get', '/v1/events', { status: r.response.status, headers: r.response.headers, body: r.data });
    return r.data!;
  };
  /** Every event of the caller's after `after`, page by page. */
  async function follow(key: string, after?: string, types: EventType[] = CLAIM_TYPES) {
    const items = [];
    let cursor = after;
    for (;;) {
      const page = await feed(key, { types, limit: 2, ...(cursor ? { after: cursor } : {}) });
      items.push(...page.items);
      if (!page.items.length) return { items, cursor };
      cursor = page.nextCursor;
    }
  }

  it('reports claims created and verified, and credential changes, in order, to the submitter and the collection creator only', async () => {
    const start = (await follow(h.key)).cursor;
    const otherStart = (await follow(h.otherKey)).cursor;
    // OTHER_DID's collection, open to every key: PARTNER_DID submits into it.
    const collectionId = `feed-${randomBytes(4).toString('hex')}`;
    await createFramedCollection(h.server, h.otherKey, { id: collectionId, name: 'Feed', openToAll: true });
    const reference = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId }) })).data!;
    expect(reference.status).to.equal('pending');
    const intervention = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId, testGroup: 'intervention', fuelMeasurements: { total: 4.5, dailyLogs: [1.5, 1.4, 1.6] } }) })).data!;
    expect(intervention.status).to.equal('verified');
    const suspended = await changeCredentialStatus({ client: h.server.client, auth: revokeKey, path: { id: reference.id }, body: { action: 'suspend', reason: 'scale check' } });
    expect(suspended.response.status).to.equal(200);

    const expected = [
      ['claim.created', reference.id],
      ['claim.created', intervention.id],
      ['claim.verified', intervention.id],
      ['claim.verified', reference.id],
      ['credential.suspended', reference.id],
    ];
    for (const [key, from] of [[h.key, start], [h.otherKey, otherStart]] as const) {
      const { items } = await follow(key, from);
      expect(items.map((e) => [e.type, (e.data as { claimId: string }).claimId])).to.deep.equal(expected);
      expect(new Set(items.map((e) => e.id)).size).to.equal(items.length);
      for (const e of items) expect(e.id).to.match(/^evt_[0-9a-f]{32}$/);
    }
    const created = (await follow(h.key, start)).items[0]!;
    expect(created.data).to.deep.equal({ claimId: reference.id, collectionId, householdId: reference.householdId, testGroup: 'reference', status: 'pending', submittedBy: PARTNER_DID });

    // A correction: in its one transaction the earlier claim is rejected and its credential revoked.
    const { cursor: beforeCorrection } = await follow(h.otherKey, otherStart);
    const correction = (await submitClaim({
      client: h.server.client, auth: h.key,
      body: kptClaim({ collectionId, householdId: intervention.householdId, testGroup: 'intervention', corrects: intervention.id, fuelMeasurements: { total: 4.2, dailyLogs: [1.4, 1.4, 1.4] } }),
    })).data!;
    expect((await follow(h.otherKey, beforeCorrection)).items.map((e) => [e.type, (e.data as { claimId: string }).claimId])).to.deep.equal([
      ['claim.rejected', intervention.id],
      ['credential.revoked', intervention.id],
      ['claim.created', correction.id],
    ]);
    // The reference claim's credential is suspended: it counts as no control group.
    expect(correction.status).to.equal('pending');

    // A third principal sees none of it.
    const stranger = await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000cccc', scopes: ['claims:read'] });
    expect((await follow(stranger)).items).to.deep.equal([]);
    // Filtered by type.
    expect((await follow(h.otherKey, otherStart, ['credential.suspended'])).items.map((e) => e.type)).to.deep.equal(['credential.suspended']);
  });

  it('reports a draw published when it is revealed (not when it is committed), to the collection creator', async () => {
    const { cursor } = await follow(h.key, undefined, ['draw.published']);
    const id = `drawn-${randomBytes(4).toString('hex')}`;
    await createCollection({ client: h.server.client, auth: h.key, body: { id, name: id, selectionDesign: { type: 'simple-random', frame: 'Register', procedure: 'Hearth draws 1' } } });
    const frame = [{ household: 'did:ixo:entity:00000000000000000000000000000001' }, { household: 'did:ixo:entity:00000000000000000000000000000002' }];
    const committed = (await createDraw({ client: h.server.client, auth: h.key, path: { id }, body: { frame, sampleSize: 1 } })).data!;
    expect((await follow(h.key, cursor, ['draw.published'])).items).to.deep.equal([]);
    expect((await revealDraw({ client: h.server.client, auth: h.key, path: { id, drawId: committed.id } })).response.status).to.equal(200);
    const { items } = await follow(h.key, cursor, ['draw.published']);
    expect(items.map((e) => e.data)).to.deep.equal([{ drawId: committed.id, collectionId: id }]);
    // Revealed again: answered as it is, nothing new to report.
    await revealDraw({ client: h.server.client, auth: h.key, path: { id, drawId: committed.id } });
    expect((await follow(h.key, cursor, ['draw.published'])).items).to.have.length(1);
    expect((await follow(h.otherKey, undefined, ['draw.published'])).items.filter((e) => (e.data as { collectionId: string }).collectionId === id)).to.deep.equal([]);
  });

  it('an empty page answers the same cursor, and the next event follows it', async () => {
    const { cursor } = await follow(h.key);
    const empty = await feed(h.key, { after: cursor!, types: CLAIM_TYPES });
    expect(empty).to.deep.equal({ items: [], nextCursor: cursor });
    const claim = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim() })).data!;
    expect((await follow(h.key, cursor)).items.map((e) => (e.data as { claimId: string }).claimId)).to.deep.equal([claim.id]);
  });

  it('refuses a cursor it did not issue (400 naming after)', async () => {
    for (const after of [encodeCursor(2 ** 30), 'bm9wZQ']) {
      const r = await listEvents({ client: h.server.client, auth: h.key, query: { after } });
      expect(r.response.status).to.equal(400);
      expect((r.error as { errors: { pointer: string }[] }).errors[0]!.pointer).to.equal('/query/after');
    }
  });

  it('a change rolled back reports nothing: a correction refused after it superseded the claim', async () => {
    const { cursor } = await follow(h.key);
    const householdId = kptClaim().householdId;
    const first = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ householdId }) })).data!;
    const later = { startDate: '2026-03-10', endDate: '2026-03-12', durationDays: 3 };
    await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ householdId, testPeriod: later }) });
    const { cursor: afterBoth } = await follow(h.key, cursor);
    // Correcting the first claim with the second's period and other logs: the first is rejected
    // (an event written) before the overlap with the second is found, and the 409 rolls both back.
    const refused = await submitClaim({
      client: h.server.client, auth: h.key,
      body: kptClaim({ householdId, corrects: first.id, testPeriod: later, fuelMeasurements: { total: 6, dailyLogs: [2, 2, 2] } }),
    });
    expect(refused.response.status).to.equal(409);
    expect((await follow(h.key, afterBoth)).items).to.deep.equal([]);
  });

  it('a transaction that writes events and throws leaves none', async () => {
    const { cursor } = await follow(h.key, undefined, ['draw.published']);
    await inTransaction(t.db, async (sql) => {
      await openEventWrites(sql);
      await recordEvents(sql, [drawPublished('drw_x', 'default', PARTNER_DID)], new Date().toISOString());
      throw new Error('rolled back');
    }).catch(() => undefined);
    expect((await follow(h.key, cursor, ['draw.published'])).items).to.deep.equal([]);
  });

  it('a transaction writing more events than one insert statement holds keeps them all, in their order', async () => {
    const prefix = `drw_bulk${randomBytes(4).toString('hex')}`;
    const drawIds = Array.from({ length: 1200 }, (_, i) => `${prefix}_${i}`);
    await inTransaction(t.db, async (sql) => {
      await openEventWrites(sql);
      await recordEvents(sql, drawIds.map((id) => drawPublished(id, 'default', PARTNER_DID)), new Date().toISOString());
    });
    const rows: { data: string }[] = await t.db('twin_events').where('type', 'draw.published').andWhere('data', 'like', `%${prefix}%`).orderBy('seq').select('data');
    expect(rows.map((r) => (JSON.parse(r.data) as { drawId: string }).drawId)).to.deep.equal(drawIds);
  });

  it('a fan-out making more deliveries than one insert statement holds makes each once', async () => {
    const repo = new WebhookRepository(t.db);
    const at = new Date().toISOString();
    const ids = Array.from({ length: 3 }, () => `whk_${randomBytes(16).toString('hex')}`);
    for (const id of ids) await repo.insert({ id, principal: PARTNER_DID, url: 'https://hooks.example/bulk', eventTypes: ['draw.published'], secret: `whsec_${Buffer.alloc(32, 9).toString('base64')}`, at });
    const drawIds = Array.from({ length: 400 }, (_, i) => `drw_fan${randomBytes(4).toString('hex')}_${i}`);
    await inTransaction(t.db, async (sql) => {
      await openEventWrites(sql);
      await recordEvents(sql, drawIds.map((id) => drawPublished(id, 'default', PARTNER_DID)), new Date().toISOString());
    });
    while ((await repo.fanOut(1000, new Date().toISOString())) > 0);
    const made: { n: number | string }[] = await t.db('twin_webhook_deliveries').whereIn('subscription_id', ids).count({ n: '*' });
    expect(Number(made[0]!.n)).to.equal(ids.length * drawIds.length);
    for (const id of ids) await repo.delete(id);
  });

  it('an intervention claim completing 600 pending reference claims verifies each, with an event each (more than one insert statement holds)', async function () {
    this.timeout(120_000);
    const collectionId = `bulk-${randomBytes(4).toString('hex')}`;
    await createFramedCollection(h.server, h.key, { id: collectionId, name: 'Bulk' });
    const pending: string[] = [];
    for (let i = 0; i < 600; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId }) })));
      pending.push(...batch.map((r) => r.data!.id));
    }
    const before = Number((await t.db('twin_events').max({ seq: 'seq' }).first())?.seq ?? 0);
    const intervention = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId, testGroup: 'intervention', fuelMeasurements: { total: 4.5, dailyLogs: [1.5, 1.4, 1.6] } }) });
    expect(intervention.response.status, JSON.stringify(intervention.error)).to.equal(201);
    expect(intervention.data!.status, JSON.stringify(intervention.data!.reasons)).to.equal('verified');
    const statuses: { status: string }[] = await t.db('kpt_claims').whereIn('id', pending).select('status');
    expect(statuses.map((c) => c.status)).to.deep.equal(pending.map(() => 'verified'));
    const verified: { data: string }[] = await t.db('twin_events').where('type', 'claim.verified').andWhere('seq', '>', before).select('data');
    const ids = new Set(verified.map((e) => (JSON.parse(e.data) as { claimId: string }).claimId));
    expect(pending.filter((id) => !ids.has(id))).to.deep.equal([]);
  });

  // PostgreSQL hands out `seq` at insert: an event with a larger seq can commit first. A follower
  // must not be given it before the one still in flight, and claims must not wait for it.
  if (t.kind === 'postgres') it('a follower never skips an event committed out of order, and claims do not wait for an event write in flight', async () => {
    const { cursor } = await follow(h.key);
    const held: Knex.Transaction = await t.db.transaction();
    const heldId = `evt_${randomBytes(16).toString('hex')}`;
    const claimId = `kpt_${randomBytes(16).toString('hex')}`;
    const heldData = { claimId, collectionId: 'default', credentialId: `urn:hearth:credential:${claimId}`, action: 'revoke', reason: 'held' };
    let createdId: string;
    try {
      // As a credential change or a draw does: the lock first, then the event.
      await openEventWrites(held);
      await held('twin_events').insert({ id: heldId, type: 'credential.revoked', occurred_at: new Date().toISOString(), submitted_by: PARTNER_DID, collection_owner: PARTNER_DID, data: JSON.stringify(heldData) });
      const created = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim() });
      expect(created.response.status, 'stored while the event insert is in flight').to.equal(201);
      createdId = created.data!.id;
      expect((await follow(h.key, cursor)).items, 'nothing given past the event in flight').to.deep.equal([]);
    } finally {
      await held.commit();
    }
    const ids = (await follow(h.key, cursor)).items.map((e) => e.id);
    expect(ids[0]).to.equal(heldId);
    const types = (await follow(h.key, cursor)).items.map((e) => [e.type, (e.data as { claimId?: string }).claimId]);
    expect(types.slice(1)).to.deep.include(['claim.created', createdId!]);
  });
});
