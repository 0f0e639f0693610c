import { expect } from 'chai';
import { sql, type Kysely } from 'kysely';
import { poolStats, type Db } from '../../src/platform/db/index.ts';
import { alsoAlone, prepared, preparedPerColumnSet } from '../../src/platform/db/prepared.ts';
import { inOneRoundTrip, inTransaction, lockRows } from '../../src/platform/db/sql.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { explainPrepared } from '../helpers/plans.ts';

interface Tables {
  prepared_t: { id: string; n: number; note: string | null };
}
const tables = (db: Db) => db as unknown as Kysely<Tables>;

forEachDatabase('prepared queries', (t) => {
  before(async () => {
    await tables(t.db)
      .schema.createTable('prepared_t')
      .addColumn('id', 'varchar(16)', (c) => c.notNull().primaryKey())
      .addColumn('n', 'integer', (c) => c.notNull())
      .addColumn('note', 'varchar(32)')
      .execute();
  });

  const insertRow = prepared((db: Db, row: Tables['prepared_t']) => tables(db).insertInto('prepared_t').values(row), { rows: { 0: ['id', 'n', 'note'] } });
  const above = prepared((db: Db, min: number, note: string) =>
    tables(db).selectFrom('prepared_t').select(['id', 'n']).where('n', '>', min).where('note', '<>', note).where('id', '<>', 'constant').orderBy('id').$call(lockRows(db, 'share')),
  );

  it('runs with each call its own values, in the places the query was built with, beside the constants it was built with', async () => {
    await insertRow(t.db, { id: 'a', n: 1, note: null });
    await insertRow(t.db, { id: 'b', n: 5, note: 'x' });
    await insertRow(t.db, { id: 'c', n: 9, note: 'y' });
    expect((await above(t.db, 2, 'y')).rows).to.deep.equal([{ id: 'b', n: 5 }]);
    expect((await above(t.db, 0, 'x')).rows).to.deep.equal([{ id: 'c', n: 9 }]);
    // The same query as built anew.
    const built = await tables(t.db).selectFrom('prepared_t').select(['id', 'n']).where('n', '>', 0).where('note', '<>', 'x').where('id', '<>', 'constant').orderBy('id').execute();
    expect((await above(t.db, 0, 'x')).rows).to.deep.equal(built);
  });

  it('refuses a row missing a column instead of binding undefined', async () => {
    let err: unknown;
    await insertRow(t.db, { id: 'd', n: 1 } as Tables['prepared_t']).catch((e: unknown) => (err = e));
    expect((err as Error)?.message).to.match(/column note has no value/);
    expect(await tables(t.db).selectFrom('prepared_t').select('id').where('id', '=', 'd').executeTakeFirst()).to.equal(undefined);
  });

  describe('sharing the round trip of its turn', () => {
    const nOf = prepared((db: Db, id: string) => tables(db).selectFrom('prepared_t').select('n').where('id', '=', id), { sharesRoundTrip: true });

    it('outside a transaction, the calls of one turn each get their own rows, on PostgreSQL in one round trip', async () => {
      await insertRow(t.db, { id: 's1', n: 11, note: null });
      await insertRow(t.db, { id: 's2', n: 22, note: null });
      const before = poolStats(t.db).roundTrips;
      const rows = await Promise.all(['s1', 's2', 'none', 's1'].map(async (id) => (await nOf(t.db, id)).rows));
      expect(rows).to.deep.equal([[{ n: 11 }], [{ n: 22 }], [], [{ n: 11 }]]);
      expect(poolStats(t.db).roundTrips - before).to.equal(t.kind === 'postgres' ? 1 : 4);
    });

    it('in a transaction, it runs on the transaction as any statement does: it sees the transaction\'s own writes, and a failure after it is not its own', async () => {
      const broken = prepared((db: Db) => ({ compile: () => sql<{ n: number }>`select n from prepared_missing`.compile(db) }), { sharesRoundTrip: true });
      let outcomes: PromiseSettledResult<unknown>[] = [];
      await inTransaction(t.db, async (trx) => {
        await insertRow(trx, { id: 's3', n: 33, note: null });
        outcomes = await Promise.allSettled([nOf(trx, 's3').then((r) => r.rows), broken(trx)]);
        throw new Error('undo');
      }).catch(() => undefined);
      expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).to.deep.equal([
        [{ n: 33 }],
        t.kind === 'postgres' ? 'relation "prepared_missing" does not exist' : 'no such table: prepared_missing',
      ]);
    });
  });

  describe('per set of columns given', () => {
    const built: (readonly string[])[] = [];
    const update = preparedPerColumnSet(
      (given: readonly ('n' | 'note')[]) => {
        built.push(given);
        return (db: Db, id: string, columns: Partial<Tables['prepared_t']>) => tables(db).updateTable('prepared_t').set(columns).where('id', '=', id);
      },
      { row: 1, optional: ['n', 'note'] },
    );
    const row = async (id: string) => tables(t.db).selectFrom('prepared_t').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('writes only the columns given, leaving the others as they were, and builds each set once (a column given as undefined is not given)', async () => {
      await insertRow(t.db, { id: 'u', n: 1, note: 'first' });
      expect((await update(t.db, 'u', { n: 2 })).numAffectedRows).to.equal(1n);
      expect(await row('u')).to.deep.equal({ id: 'u', n: 2, note: 'first' });
      await update(t.db, 'u', { note: null, n: undefined });
      expect(await row('u')).to.deep.equal({ id: 'u', n: 2, note: null });
      await update(t.db, 'u', { note: 'both', n: 3 });
      await update(t.db, 'u', { n: 4 });
      update.query(t.db, 'u', { note: 'again' }); // compiled, not run
      expect(await row('u')).to.deep.equal({ id: 'u', n: 4, note: 'both' });
      await t.db.executeQuery(update.query(t.db, 'u', { note: 'again' }));
      expect(await row('u')).to.deep.equal({ id: 'u', n: 4, note: 'again' });
      // The optional columns' order, whatever order the row gives them in.
      expect(built).to.deep.equal([['n'], ['note'], ['n', 'note']]);
    });

    it('refuses a column it does not write instead of dropping its value, and leaves the row as it was', async () => {
      await insertRow(t.db, { id: 'v', n: 1, note: null });
      let err: unknown;
      await update(t.db, 'v', { n: 5, id: 'w' }).catch((e: unknown) => (err = e));
      expect((err as Error)?.message).to.equal('prepared query: column id is not one it writes');
      expect(await row('v')).to.deep.equal({ id: 'v', n: 1, note: null });
    });
  });

  if (t.kind === 'postgres') {
    it('PostgreSQL: each connection prepares a prepared query once (by name) and plans it for each run\'s values, never from a plan cached while the table was small', async () => {
      const { names, mode } = await inTransaction(t.db, async (trx) => {
        await above(trx, 0, 'x');
        await above(trx, 1, 'y');
        const statements = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(trx);
        const planning = await sql<{ plan_cache_mode: string }>`show plan_cache_mode`.execute(trx);
        return { names: statements.rows.filter((r) => r.statement.includes('"prepared_t"') && r.statement.includes('"note" <>')).map((r) => r.name), mode: planning.rows[0]!.plan_cache_mode };
      });
      expect(names).to.have.length(1);
      expect(names[0]).to.match(/^hearth_\d+$/);
      expect(mode).to.equal('force_custom_plan');
    });

    // The planning a statement ran under, read by the statement itself.
    const planning = (db: Db) => sql<{ mode: string; seqscan: string }>`select current_setting('plan_cache_mode') as mode, current_setting('enable_seqscan') as seqscan`.compile(db);
    const plannedOnce = prepared((db: Db) => ({ compile: () => planning(db) }), { planOnce: true });
    const plannedEachRun = prepared((db: Db) => ({ compile: () => planning(db) }));
    const ONCE = { mode: 'force_generic_plan', seqscan: 'off' };
    const EACH_RUN = { mode: 'force_custom_plan', seqscan: 'on' };

    it('PostgreSQL: in a transaction, a statement planned once runs on a kept plan made from indexes, and the statements after it that are not are planned for their values again', async () => {
      const inside = await inTransaction(t.db, async (trx) => [
        (await plannedOnce(trx)).rows[0],
        (await plannedEachRun(trx)).rows[0],
        (await trx.executeQuery(planning(trx))).rows[0],
        (await plannedOnce(trx)).rows[0],
      ]);
      expect(inside).to.deep.equal([ONCE, EACH_RUN, EACH_RUN, ONCE]);
      // Statements sent together (one round trip) are each planned as they ask too.
      const together = await inTransaction(t.db, (trx) => inOneRoundTrip(trx, [plannedEachRun.query(trx), plannedOnce.query(trx), plannedOnce.query(trx), plannedEachRun.query(trx)] as const));
      expect(together.map((r) => r.rows[0])).to.deep.equal([EACH_RUN, ONCE, ONCE, EACH_RUN]);
      // Outside a transaction, and after one, the connection plans for each run's values.
      expect((await plannedOnce(t.db)).rows[0]).to.deep.equal(EACH_RUN);
      expect((await plannedEachRun(t.db)).rows[0]).to.deep.equal(EACH_RUN);
    });

    it("PostgreSQL: outside a transaction, a statement planned once 'also alone' is a transaction of its own planned once; the connection plans the others for their values, also after one that failed", async () => {
      const plannedOnceAlone = prepared((db: Db) => ({ compile: () => planning(db) }), { planOnce: 'also alone' });
      const outside = await inOneRoundTrip(t.db, [plannedEachRun.query(t.db), plannedOnceAlone.query(t.db), plannedOnce.query(t.db), plannedOnceAlone.query(t.db)] as const);
      expect(outside.map((r) => r.rows[0])).to.deep.equal([EACH_RUN, ONCE, EACH_RUN, ONCE]);
      expect((await plannedOnceAlone(t.db)).rows[0]).to.deep.equal(ONCE);
      expect((await plannedEachRun(t.db)).rows[0]).to.deep.equal(EACH_RUN);
      // In a transaction it is planned once as any statement planned once is.
      const inside = await inTransaction(t.db, (trx) => inOneRoundTrip(trx, [plannedOnceAlone.query(trx), plannedEachRun.query(trx), plannedOnceAlone.query(trx)] as const));
      expect(inside.map((r) => r.rows[0])).to.deep.equal([ONCE, EACH_RUN, ONCE]);

      // Its write is committed with it: another connection sees it.
      const insertOnce = prepared((db: Db, row: Tables['prepared_t']) => tables(db).insertInto('prepared_t').values(row), { rows: { 0: ['id', 'n', 'note'] }, planOnce: 'also alone' });
      await insertOnce(t.db, { id: 'once', n: 3, note: null });
      expect(await tables(t.open()).selectFrom('prepared_t').select('n').where('id', '=', 'once').execute()).to.deep.equal([{ n: 3 }]);

      // A failure is the statement's own (not "the transaction is aborted"), and its transaction
      // ends with it: the statements sent after it run as they would have.
      const divide = prepared((db: Db, by: number) => ({ compile: () => sql<{ q: number }>`select 1 / ${by}::int as q`.compile(db) }), { planOnce: 'also alone' });
      let err: unknown;
      await inOneRoundTrip(t.db, [divide.query(t.db, 0), plannedEachRun.query(t.db)] as const).catch((e: unknown) => (err = e));
      expect((err as Error)?.message).to.equal('division by zero');
      const after = await inOneRoundTrip(t.db, [plannedEachRun.query(t.db), divide.query(t.db, 1), plannedEachRun.query(t.db)] as const);
      expect(after.map((r) => r.rows[0])).to.deep.equal([EACH_RUN, { q: 1 }, EACH_RUN]);
      await tables(t.db).deleteFrom('prepared_t').where('id', '=', 'once').execute();
    });

    it("PostgreSQL: outside a transaction, statements planned once 'also alone' sent one after another share one transaction: they commit together or not at all", async () => {
      const txid = (db: Db) => sql<{ txid: string }>`select txid_current()::text as txid`.compile(db);
      const txidAlone = prepared((db: Db) => ({ compile: () => txid(db) }), { planOnce: 'also alone' });
      const txidEachRun = prepared((db: Db) => ({ compile: () => txid(db) }));
      const ids = (await inOneRoundTrip(t.db, [txidAlone.query(t.db), txidAlone.query(t.db), txidEachRun.query(t.db), txidAlone.query(t.db), txidAlone.query(t.db)] as const)).map((r) => r.rows[0]!.txid);
      expect(ids[1]).to.equal(ids[0]);
      expect(ids[4]).to.equal(ids[3]);
      expect(new Set([ids[0], ids[2], ids[3]]).size).to.equal(3);

      // A statement planned once made 'also alone' where it is sent (alsoAlone) joins them there,
      // and is planned for its values alone elsewhere.
      const planningAlone = prepared((db: Db) => ({ compile: () => planning(db) }), { planOnce: 'also alone' });
      const together = await inOneRoundTrip(t.db, [planningAlone.query(t.db), alsoAlone(plannedOnce.query(t.db)), plannedOnce.query(t.db)] as const);
      expect(together.map((r) => r.rows[0])).to.deep.equal([ONCE, ONCE, EACH_RUN]);
      expect(() => alsoAlone(plannedEachRun.query(t.db))).to.throw('alsoAlone: the statement is not planned once');

      const insertAlone = prepared((db: Db, row: Tables['prepared_t']) => tables(db).insertInto('prepared_t').values(row), { rows: { 0: ['id', 'n', 'note'] }, planOnce: 'also alone' });
      const divide = prepared((db: Db, by: number) => ({ compile: () => sql<{ q: number }>`select 1 / ${by}::int as q`.compile(db) }), { planOnce: 'also alone' });
      let err: unknown;
      await inOneRoundTrip(t.db, [insertAlone.query(t.db, { id: 'together', n: 1, note: null }), divide.query(t.db, 0), plannedEachRun.query(t.db)] as const).catch((e: unknown) => (err = e));
      expect((err as Error)?.message).to.equal('division by zero');
      expect(await tables(t.db).selectFrom('prepared_t').select('id').where('id', '=', 'together').execute()).to.deep.equal([]);
      // The first failure is the one thrown, even when it fails the statements after it.
      err = undefined;
      await inOneRoundTrip(t.db, [divide.query(t.db, 0), insertAlone.query(t.db, { id: 'together', n: 1, note: null })] as const).catch((e: unknown) => (err = e));
      expect((err as Error)?.message).to.equal('division by zero');
      await inOneRoundTrip(t.db, [insertAlone.query(t.db, { id: 'together', n: 1, note: null }), divide.query(t.db, 1)] as const);
      expect(await tables(t.db).selectFrom('prepared_t').select('id').where('id', '=', 'together').execute()).to.deep.equal([{ id: 'together' }]);
      await tables(t.db).deleteFrom('prepared_t').where('id', '=', 'together').execute();
    });

    it('PostgreSQL: the plan made once reads by an index, even while the table is small enough that one planned for its values reads it whole', async () => {
      await sql`create index prepared_t_n on prepared_t (n)`.execute(t.db);
      const byN = prepared((db: Db, n: number) => tables(db).selectFrom('prepared_t').select('id').where('n', '=', n), { planOnce: true });
      const plans = await inTransaction(t.db, async (trx) => {
        await byN(trx, 1);
        const explain = async (planOnce: boolean) => (await explainPrepared(trx, '%from "prepared_t" where "n" = $1', { planOnce, args: ['1'] })).join('\n');
        return { eachRun: await explain(false), once: await explain(true) };
      });
      expect(plans.eachRun).to.match(/Seq Scan on prepared_t/);
      expect(plans.once).to.match(/Index (Only )?Scan using prepared_t_n on prepared_t/);
      expect(plans.once).to.include('$1');
      await sql`drop index prepared_t_n`.execute(t.db);
    });
  }

  it('counts the rows a write changed', async () => {
    const bump = prepared((db: Db, id: string) => tables(db).updateTable('prepared_t').set((eb) => ({ n: eb('n', '+', 1) })).where('id', '=', id));
    expect((await bump(t.db, 'a')).numAffectedRows).to.equal(1n);
    expect((await bump(t.db, 'none')).numAffectedRows).to.equal(0n);
  });
});
