// Lists page by `seq`. On PostgreSQL a sequence hands out `seq` at insert, so without care a row
// with a larger `seq` can commit first: a follower paging past it would never see the smaller
// one. Each test holds an insert open (as a slow request on another instance would). Entities
// and collections: a new row made through the API waits for it, and so is never listed before
// it. Claims: a new claim does not wait, and no follower is given it before the held one.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createCollection, createEntity, listClaims, listCollections, listEntities, listEvents, submitClaim } from '../../generated/openapi/sdk.gen.ts';
import { ChainRepository } from '../../src/chain/node/repository.ts';
import { LOCK_KEY_SQL, locksUntilCommit, takeSeqTurn } from '../../src/platform/db/sql.ts';
import { CLAIM_WRITERS, settleClaimAndEventOrder } from '../../src/twins/claims/claim-order.repository.ts';
import { twinsReadPort } from '../../src/twins/read-port.repository.ts';
import { encodeCursor } from '../../src/twins/paging.ts';
import { forEachDatabase, untilRows } from '../helpers/databases.ts';
import { watched } from '../helpers/fake-clock.ts';
import { householdDid, kptClaim, startTwinsHarness, type TwinsHarness } from './fixtures.ts';

type SeqTable = 'twin_entities' | 'kpt_collections';

forEachDatabase('seq order is commit order', (t) => {
  if (t.kind !== 'postgres') return;
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  /** Inserts a copy of a stored row (with new unique values) in a transaction left open. */
  async function holdInsert(table: SeqTable | 'kpt_claims', copyOf: Record<string, unknown>, unique: Record<string, string | null>): Promise<Knex.Transaction> {
    const { seq: _seq, tx: _tx, ...row } = copyOf;
    const trx = await t.db.transaction();
    // As a claim submission does, before its transaction takes an id.
    if (table === 'kpt_claims') await locksUntilCommit(trx, [CLAIM_WRITERS]);
    else await takeSeqTurn(trx, table);
    await trx.table(table).insert({ ...row, ...unique } as never);
    return trx;
  }

  /** A stored row as it is, to copy. */
  async function rowOf(table: SeqTable | 'kpt_claims', key: 'did' | 'id', value: string): Promise<Record<string, unknown>> {
    return (await t.db.table(table).where(key, value).first()) as Record<string, unknown>;
  }

  /** Waits until a request is blocked on this schema's seq turn for `table`; 0 if `request` (the one that should wait) answers first. */
  async function seqTurnWaiters(table: SeqTable, request: Promise<unknown>): Promise<number> {
    const waiting = await untilRows(
      t.db,
      request,
      `with k as (select ${LOCK_KEY_SQL} as key)
       select pid from pg_locks, k
       where locktype = 'advisory' and not granted and objsubid = 1
         and classid = ((key >> 32) & 4294967295)::oid and objid = (key & 4294967295)::oid`,
      [`seq-order:${table}`],
    );
    return waiting.length;
  }

  /**
   * Holds an insert open, starts a create through the API, and checks the create waits for the
   * held row and is listed after it; `list` returns the listed ids in order.
   */
  async function expectCommitOrder(
    table: SeqTable,
    held: () => Promise<{ trx: Knex.Transaction; id: string }>,
    create: () => Promise<string>,
    list: () => Promise<string[]>,
  ) {
    const before = await list();
    const { trx, id: heldId } = await held();
    let created: ReturnType<typeof watched<string>> | undefined;
    try {
      created = watched(create());
      expect(await seqTurnWaiters(table, created.done), 'the create waits for the insert in flight').to.be.greaterThan(0);
      expect(created.settled(), 'the create has not finished').to.equal(false);
      // What a follower sees meanwhile: neither row, so its position cannot pass the held one.
      expect(await list()).to.deep.equal(before);
    } finally {
      await trx.commit();
    }
    const createdId = await created.done;
    const listed = await list();
    expect(listed.indexOf(heldId), 'held row listed').to.be.greaterThan(-1);
    expect(listed.indexOf(createdId)).to.be.greaterThan(listed.indexOf(heldId));
  }

  it('entities', async () => {
    const type = `SeqOrder${randomBytes(4).toString('hex')}`;
    const first = (await createEntity({ client: h.server.client, auth: h.key, body: { type, properties: {} } })).data!.did;
    const row = await rowOf('twin_entities', 'did', first);
    await expectCommitOrder(
      'twin_entities',
      async () => {
        const did = householdDid();
        return { trx: await holdInsert('twin_entities', row, { did }), id: did };
      },
      async () => (await createEntity({ client: h.server.client, auth: h.key, body: { type, properties: {} } })).data!.did,
      async () => (await listEntities({ client: h.server.client, auth: h.key, query: { type, limit: 100 } })).data!.items.map((e) => e.did),
    );
  });

  it('collections', async () => {
    const row = await rowOf('kpt_collections', 'id', 'default');
    await expectCommitOrder(
      'kpt_collections',
      async () => {
        const id = `held-${randomBytes(4).toString('hex')}`;
        return { trx: await holdInsert('kpt_collections', row, { id }), id };
      },
      async () => {
        const id = `new-${randomBytes(4).toString('hex')}`;
        expect((await createCollection({ client: h.server.client, auth: h.key, body: { id, name: 'Seq order' } })).response.status).to.equal(201);
        return id;
      },
      async () => (await listCollections({ client: h.server.client, auth: h.key, query: { limit: 100 } })).data!.items.map((c) => c.id),
    );
  });

  it('claims: a transaction in flight that inserts no claim does not hold back the lists', async () => {
    const other = await t.db.transaction();
    try {
      // It has a transaction id older than the claim's.
      await other('twin_evidence_blobs').insert({ cid: `held-${randomBytes(8).toString('hex')}`, media_type: 'text/plain', content: 'x', size: 1, created_at: new Date().toISOString() });
      const created = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim() })).data!.id;
      const listed = (await listClaims({ client: h.server.client, auth: h.key, query: { limit: 100 } })).data!.items.map((c) => c.id);
      expect(listed).to.include(created);
    } finally {
      await other.rollback();
    }
  });

  // Claims take no turn: their followers are given only rows no insert in flight can precede.
  for (const sameCollection of [false, true]) it(`claims, in ${sameCollection ? 'the same collection' : 'different collections'}: a new claim does not wait for an insert in flight, and no follower is given it first`, async () => {
    const heldIn = `held-${randomBytes(4).toString('hex')}`;
    const createdIn = sameCollection ? heldIn : `new-${randomBytes(4).toString('hex')}`;
    for (const id of new Set([heldIn, createdIn])) await createCollection({ client: h.server.client, auth: h.key, body: { id, name: 'Seq order' } });
    const first = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: heldIn }) })).data!.id;
    const row = await rowOf('kpt_claims', 'id', first);
    const chain = new ChainRepository(twinsReadPort(t.db));
    // Every reader paging claims by position, from the start and from the last row stored so far.
    const followers: Record<string, (after?: number) => Promise<string[]>> = {
      'GET /v1/claims': async (after) =>
        (await listClaims({ client: h.server.client, auth: h.key, query: { limit: 100, ...(after ? { cursor: encodeCursor(after) } : {}) } })).data!.items.map((c) => c.id),
      'chain node': async (after) => {
        const ids = (await chain.claims.fetch({ offset: 0, take: 100, reverse: false, ...(after ? { fromKey: String(after) } : {}) })).map((c) => c.id);
        // A key is inclusive: the row it names comes first.
        return after ? ids.slice(1) : ids;
      },
    };
    const lastSeq = (await rowOf('kpt_claims', 'id', first)).seq as number;
    const before: Record<string, string[]> = Object.fromEntries(await Promise.all(Object.entries(followers).map(async ([name, f]) => [name, await f()])));
    const heldId = `kpt_${randomBytes(16).toString('hex')}`;
    const trx = await holdInsert('kpt_claims', row, { id: heldId, claim_key: randomBytes(32).toString('hex'), household_did: householdDid(), status_list_index: null });
    let createdId: string;
    try {
      const created = await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: createdIn }) });
      expect(created.response.status, 'stored while the other insert is in flight').to.equal(201);
      createdId = created.data!.id;
      for (const [name, follow] of Object.entries(followers)) {
        expect(await follow(), name).to.deep.equal(before[name]);
        expect(await follow(lastSeq), `${name}, after the last row`).to.deep.equal([]);
      }
    } finally {
      await trx.commit();
    }
    for (const [name, follow] of Object.entries(followers)) {
      expect(await follow(lastSeq), `${name}, after the last row`).to.deep.equal([heldId, createdId]);
      expect(await follow(), name).to.deep.equal([...before[name]!, heldId, createdId]);
    }
  });

  // A database dumped and restored into another cluster keeps the transaction ids of the one that
  // wrote it; this cluster's may be behind them (a new server's are).
  it('claims and events, after the database is moved to a cluster whose transaction ids are behind: start-up settles the order, followers are given every row stored and each new one after them', async () => {
    const movedId = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim() })).data!.id;
    const movedSeq = (await rowOf('kpt_claims', 'id', movedId)).seq as number;
    const claimIds = async (after?: number) =>
      (await listClaims({ client: h.server.client, auth: h.key, query: { limit: 100, ...(after ? { cursor: encodeCursor(after) } : {}) } })).data!.items.map((c) => c.id);
    const chain = new ChainRepository(twinsReadPort(t.db));
    const chainIds = async () => (await chain.claims.fetch({ offset: 0, take: 100, reverse: false })).map((c) => c.id);
    /** The caller's events after `after`, page by page, and the cursor after the last. */
    const events = async (after?: string) => {
      const items: unknown[] = [];
      for (let cursor = after; ; ) {
        const page = (await listEvents({ client: h.server.client, auth: h.key, query: { limit: 50, ...(cursor ? { after: cursor } : {}) } })).data!;
        if (!page.items.length) return { items, cursor };
        items.push(...page.items);
        cursor = page.nextCursor;
      }
    };
    const { cursor: eventsEnd } = await events();

    for (const table of ['kpt_claims', 'twin_events']) await t.db.raw('update ?? set tx = (tx::text::numeric + 1000000000)::text::xid8', [table]);
    expect(await claimIds(), 'before the order is settled, no follower is given a claim stored').not.to.include(movedId);

    // Two instances starting at once: one raises the offset, the other finds it raised.
    const settled = await Promise.all([settleClaimAndEventOrder(t.db), settleClaimAndEventOrder(t.db)]);
    expect(settled.filter((offset) => offset !== undefined), 'raised once').to.have.lengthOf(1).and.satisfy((raised: string[]) => /^\d+$/.test(raised[0]!));
    expect(await settleClaimAndEventOrder(t.db), 'and not again').to.equal(undefined);
    expect(await claimIds()).to.include(movedId);
    expect(await chainIds()).to.include(movedId);
    expect(await claimIds(movedSeq), 'nothing after the last claim stored').to.deep.equal([]);

    const createdId = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim() })).data!.id;
    expect(await claimIds(movedSeq), 'a follower at the last claim stored').to.deep.equal([createdId]);
    expect((await chainIds()).slice(-2)).to.deep.equal([movedId, createdId]);
    const after = (await events(eventsEnd)).items as { type: string; data: { claimId?: string } }[];
    expect(after.map((e) => [e.type, e.data.claimId]), 'a follower of the events at the last one stored').to.deep.include(['claim.created', createdId]);
  });
});
