import { expect } from 'chai';
import { sql as raw, type CompiledQuery, type Kysely } from 'kysely';
import { alsoAlone, named } from '../../src/platform/db/drivers.ts';
import { createDb, isDatabaseUnavailable, poolStats, type Db } from '../../src/platform/db/index.ts';
import { inOneRoundTrip, inSharedRoundTrip, inSharedTransaction, inTransaction, lockRows, lockUntilCommit, sharedTransactionStats, writeBehind } from '../../src/platform/db/sql.ts';
import { createTestDatabase, forEachDatabase } from '../helpers/databases.ts';

/** The test's own tables, beside the migrated ones. */
interface Tables {
  sql_runner_t: { id: string; flag: boolean | number; n: number | null };
  gc_parent: { id: string };
  gc_child: { id: string; parent_id: string | null };
}
const tables = (db: Db) => db as unknown as Kysely<Tables>;

forEachDatabase('Kysely over our drivers', (t) => {
  let db: Kysely<Tables>;
  before(async () => {
    db = tables(t.db);
    await db.schema
      .createTable('sql_runner_t')
      .addColumn('id', 'varchar(64)', (c) => c.notNull().primaryKey())
      .addColumn('flag', 'boolean', (c) => c.notNull())
      .addColumn('n', 'integer')
      .execute();
  });

  it('reads, writes and counts changed rows, binding booleans', async () => {
    expect(Number((await db.insertInto('sql_runner_t').values({ id: 'a', flag: true, n: 1 }).executeTakeFirst()).numInsertedOrUpdatedRows)).to.equal(1);
    await db.insertInto('sql_runner_t').values({ id: 'b', flag: false, n: 2 }).execute();
    const a = await db.selectFrom('sql_runner_t').selectAll().where('id', '=', 'a').executeTakeFirst();
    expect(a?.id).to.equal('a');
    expect(Boolean(a?.flag)).to.equal(true);
    expect(await db.selectFrom('sql_runner_t').selectAll().where('id', '=', 'none').executeTakeFirst()).to.equal(undefined);
    expect((await db.selectFrom('sql_runner_t').select('id').orderBy('id').execute()).map((r) => r.id)).to.deep.equal(['a', 'b']);
    expect((await db.updateTable('sql_runner_t').set({ n: 5 }).where('flag', '=', false).executeTakeFirst()).numUpdatedRows).to.equal(1n);
    expect((await db.updateTable('sql_runner_t').set({ n: 9 }).where('id', '=', 'none').executeTakeFirst()).numUpdatedRows).to.equal(0n);
    expect((await db.deleteFrom('sql_runner_t').where('n', '>=', 0).executeTakeFirst()).numDeletedRows).to.equal(2n);
  });

  it('surfaces constraint violations as the driver reports them', async () => {
    await db.insertInto('sql_runner_t').values({ id: 'dup', flag: true }).execute();
    let error: unknown;
    try {
      await db.insertInto('sql_runner_t').values({ id: 'dup', flag: true }).execute();
    } catch (err) {
      error = err;
    }
    expect((error as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
    await db.deleteFrom('sql_runner_t').execute();
  });

  it('a statement outside a transaction never sees it uncommitted', async () => {
    let outside: Promise<{ n: number | string | bigint } | undefined> | undefined;
    await inTransaction(t.db, async (trx) => {
      const inside = tables(trx);
      await inside.insertInto('sql_runner_t').values({ id: 'tx', flag: true }).execute();
      expect(await inside.selectFrom('sql_runner_t').select('id').where('id', '=', 'tx').executeTakeFirst()).to.deep.equal({ id: 'tx' });
      // On SQLite this waits for the only connection until the transaction is over.
      outside = db.selectFrom('sql_runner_t').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
      throw new Error('roll back');
    }).catch((err: Error) => expect(err.message).to.equal('roll back'));
    expect(Number((await outside)!.n)).to.equal(0);
    expect(await db.selectFrom('sql_runner_t').select('id').where('id', '=', 'tx').executeTakeFirst()).to.equal(undefined);
  });

  it('inTransaction commits what fn wrote when it resolves', async () => {
    const result = await inTransaction(t.db, async (trx) => {
      await tables(trx).insertInto('sql_runner_t').values([{ id: 'c1', flag: true }, { id: 'c2', flag: false }]).execute();
      return (await tables(trx).selectFrom('sql_runner_t').select('id').where('id', 'like', 'c%').execute()).length;
    });
    expect(result).to.equal(2);
    expect((await db.selectFrom('sql_runner_t').select('id').where('id', 'like', 'c%').execute()).length).to.equal(2);
  });

  it('inTransaction rolls back every write when fn throws, also after a failed statement', async () => {
    let caught: unknown;
    try {
      await inTransaction(t.db, async (trx) => {
        await tables(trx).insertInto('sql_runner_t').values({ id: 'r1', flag: true }).execute();
        await tables(trx).insertInto('sql_runner_t').values({ id: 'c1', flag: true }).execute();
      });
    } catch (err) {
      caught = err;
    }
    expect((caught as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
    expect(await db.selectFrom('sql_runner_t').select('id').where('id', '=', 'r1').executeTakeFirst()).to.equal(undefined);
    // The connection is usable again and not left inside a transaction.
    await db.insertInto('sql_runner_t').values({ id: 'r2', flag: true }).execute();
    await inTransaction(t.db, (trx) => tables(trx).deleteFrom('sql_runner_t').where('id', 'in', ['c1', 'c2', 'r2']).execute());
    expect(await db.selectFrom('sql_runner_t').select('id').execute()).to.deep.equal([]);
  });

  it('concurrent transactions each see the other only once committed (read-modify-write keeps every increment)', async () => {
    await db.insertInto('sql_runner_t').values({ id: 'counter', flag: true, n: 0 }).execute();
    await Promise.all(
      Array.from({ length: 20 }, () =>
        inTransaction(t.db, async (trx) => {
          const row = await tables(trx).selectFrom('sql_runner_t').select('n').where('id', '=', 'counter').$call(lockRows(trx, 'update')).executeTakeFirstOrThrow();
          await new Promise((r) => setImmediate(r));
          await tables(trx).updateTable('sql_runner_t').set({ n: row.n! + 1 }).where('id', '=', 'counter').execute();
        }),
      ),
    );
    expect(await db.selectFrom('sql_runner_t').select('n').where('id', '=', 'counter').executeTakeFirst()).to.deep.equal({ n: 20 });
    await db.deleteFrom('sql_runner_t').execute();
  });

  it('calls sent together each keep their own outcome: one throwing undoes only its writes; each settles with its writes visible to another connection', async () => {
    const other = tables(t.open());
    try {
      const results = await Promise.allSettled(
        ['g1', 'g2', 'g3', 'g4'].map((id) =>
          inTransaction(t.db, async (trx) => {
            await tables(trx).insertInto('sql_runner_t').values({ id, flag: true }).execute();
            if (id === 'g3') throw new Error('g3 fails');
            const seen = await other.selectFrom('sql_runner_t').select('id').where('id', '=', id).executeTakeFirst();
            return { id, seenBeforeCommit: seen !== undefined };
          }),
        ),
      );
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      for (const r of results) if (r.status === 'fulfilled') expect(r.value.seenBeforeCommit, r.value.id).to.equal(false);
      expect((await other.selectFrom('sql_runner_t').select('id').where('id', 'like', 'g%').orderBy('id').execute()).map((r) => r.id)).to.deep.equal(['g1', 'g2', 'g4']);
    } finally {
      await db.deleteFrom('sql_runner_t').where('id', 'like', 'g%').execute();
    }
  });

  const ids = async (prefix: string) => (await db.selectFrom('sql_runner_t').select('id').where('id', 'like', `${prefix}%`).orderBy('id').execute()).map((r) => r.id);
  const insertRow = (trx: Db, id: string) => tables(trx).insertInto('sql_runner_t').values({ id, flag: true }).compile();
  const countRows = (trx: Db, prefix: string) =>
    tables(trx).selectFrom('sql_runner_t').select((eb) => eb.fn.countAll().as('n')).where('id', 'like', `${prefix}%`).compile();

  it('inOneRoundTrip runs its statements in order, each seeing what the ones before it wrote, and fails with the first failure, undoing the transaction', async () => {
    try {
      const [inserted, counted] = await inTransaction(t.db, (trx) => inOneRoundTrip(trx, [insertRow(trx, 'p1'), countRows(trx, 'p')] as const));
      expect(inserted.numAffectedRows).to.equal(1n);
      expect(Number(counted.rows[0]!.n)).to.equal(1);
      let caught: unknown;
      await inTransaction(t.db, async (trx) => {
        await tables(trx).insertInto('sql_runner_t').values({ id: 'p2', flag: true }).execute();
        await inOneRoundTrip(trx, [insertRow(trx, 'p1'), insertRow(trx, 'p3')] as const);
      }).catch((err: unknown) => (caught = err));
      expect((caught as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
      expect(await ids('p')).to.deep.equal(['p1']);
    } finally {
      await db.deleteFrom('sql_runner_t').where('id', 'like', 'p%').execute();
    }
  });

  it('writeBehind: the write is in place for the statements after it, its failure fails the unit of work with nothing stored, and a unit of work that throws drops it', async () => {
    try {
      const seen = await inTransaction(t.db, async (trx) => {
        await writeBehind(trx, insertRow(trx, 'w1'));
        return Number((await trx.executeQuery(countRows(trx, 'w'))).rows[0]!.n);
      });
      expect(seen).to.equal(1);
      let caught: unknown;
      await inTransaction(t.db, async (trx) => {
        await tables(trx).insertInto('sql_runner_t').values({ id: 'w2', flag: true }).execute();
        await writeBehind(trx, insertRow(trx, 'w1'));
      }).catch((err: unknown) => (caught = err));
      expect((caught as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
      await inTransaction(t.db, async (trx) => {
        await writeBehind(trx, insertRow(trx, 'w3'));
        throw new Error('changed its mind');
      }).catch((err: Error) => (caught = err));
      expect((caught as Error).message).to.equal('changed its mind');
      expect(await ids('w')).to.deep.equal(['w1']);
      // The connection is usable again and not left inside a transaction.
      await db.insertInto('sql_runner_t').values({ id: 'w4', flag: true }).execute();
      expect(await ids('w')).to.deep.equal(['w1', 'w4']);
    } finally {
      await db.deleteFrom('sql_runner_t').where('id', 'like', 'w%').execute();
    }
  });

  // SQLite undoes only the failed statement, so there a unit of work may go on after one.
  if (t.kind === 'postgres') {
    it('a unit of work that caught a failed statement and went on is not reported stored: its COMMIT (answered ROLLBACK) fails, and nothing of it is kept', async () => {
      let caught: unknown;
      await inTransaction(t.db, async (trx) => {
        await tables(trx).insertInto('sql_runner_t').values({ id: 'k1', flag: true }).execute();
        await tables(trx).insertInto('sql_runner_t').values({ id: 'k1', flag: true }).execute().catch(() => undefined);
      }).catch((err: unknown) => (caught = err));
      expect((caught as Error)?.message).to.equal('the transaction was rolled back: one of its statements had failed');
      expect(await ids('k')).to.deep.equal([]);
    });
  }

  it('round trips (hearth_db_round_trips_total): PostgreSQL sends a transaction\'s BEGIN with its first statement, its writes behind with its COMMIT, and statements run together at once; SQLite counts statements', async () => {
    const trips = async (fn: () => Promise<unknown>) => {
      const before = poolStats(t.db).roundTrips;
      await fn();
      return poolStats(t.db).roundTrips - before;
    };
    try {
      const together = await trips(() => inOneRoundTrip(t.db, [countRows(t.db, 'r'), countRows(t.db, 'r'), countRows(t.db, 'r')] as const));
      const unitOfWork = await trips(() =>
        inTransaction(t.db, async (trx) => {
          await inOneRoundTrip(trx, [countRows(trx, 'r'), countRows(trx, 'r')] as const);
          await writeBehind(trx, insertRow(trx, 'r1'));
          await writeBehind(trx, insertRow(trx, 'r2'));
        }),
      );
      const idle = await trips(() => inTransaction(t.db, () => Promise.resolve('nothing to do')));
      if (t.kind === 'postgres') {
        expect({ together, unitOfWork, idle }).to.deep.equal({ together: 1, unitOfWork: 2, idle: 0 });
      } else {
        // SQLite: each statement, and the group commit's BEGIN, SAVEPOINT, RELEASE and COMMIT.
        expect({ together, unitOfWork, idle }).to.deep.equal({ together: 3, unitOfWork: 8, idle: 4 });
      }
      expect(await ids('r')).to.deep.equal(['r1', 'r2']);
    } finally {
      await db.deleteFrom('sql_runner_t').where('id', 'like', 'r%').execute();
    }
  });

  describe('inSharedRoundTrip', () => {
    const trips = async <T>(fn: () => Promise<T>) => {
      const before = poolStats(t.db).roundTrips;
      const value = await fn();
      return { value, trips: poolStats(t.db).roundTrips - before };
    };
    const valueOf = (trx: Db, n: number) => raw<{ v: number }>`select cast(${n} as integer) as v`.compile(trx);
    const missing = (trx: Db) => raw<{ v: number }>`select v from shared_trip_missing`.compile(trx);
    const values = (results: { rows: { v: number }[] }[]) => results.map((r) => r.rows[0]!.v);

    it('gives each call its own statements\' results; on PostgreSQL the calls of one turn go in one round trip', async () => {
      const { value, trips: sent } = await trips(() =>
        Promise.all([inSharedRoundTrip(t.db, [valueOf(t.db, 1), valueOf(t.db, 2)] as const), inSharedRoundTrip(t.db, [valueOf(t.db, 3)] as const), inSharedRoundTrip(t.db, [valueOf(t.db, 4), valueOf(t.db, 5)] as const)]),
      );
      expect(value.map(values)).to.deep.equal([[1, 2], [3], [4, 5]]);
      expect(sent).to.equal(t.kind === 'postgres' ? 1 : 5);
    });

    it('at most 32 calls go in one round trip: the calls of a busier turn go on more connections at once', async () => {
      const { value, trips: sent } = await trips(() => Promise.all(Array.from({ length: 40 }, (_, i) => inSharedRoundTrip(t.db, [valueOf(t.db, i)] as const))));
      expect(value.map(values)).to.deep.equal(Array.from({ length: 40 }, (_, i) => [i]));
      expect(sent).to.equal(t.kind === 'postgres' ? 2 : 40);
    });

    it('a call whose statement fails gets its own failure; the calls beside it get their results, as they would alone, in the same round trip', async () => {
      const { value: outcomes, trips: sent } = await trips(() =>
        Promise.allSettled([
          inSharedRoundTrip(t.db, [valueOf(t.db, 1)] as const),
          inSharedRoundTrip(t.db, [valueOf(t.db, 2), missing(t.db)] as const),
          inSharedRoundTrip(t.db, [valueOf(t.db, 4), valueOf(t.db, 3)] as const),
        ]),
      );
      expect(outcomes.map((o) => (o.status === 'fulfilled' ? values(o.value) : (o.reason as Error).message))).to.deep.equal([
        [1],
        t.kind === 'postgres' ? 'relation "shared_trip_missing" does not exist' : 'no such table: shared_trip_missing',
        [4, 3],
      ]);
      // Each statement is a transaction of its own: nothing is sent again.
      expect(sent).to.equal(t.kind === 'postgres' ? 1 : 5);
    });

    it('writes share the round trip too: each is a transaction of its own, a refused one fails only its call, and none runs twice', async () => {
      const insert = (id: string, n: number) => db.insertInto('sql_runner_t').values({ id, flag: true, n }).compile();
      const bump = (id: string) => db.updateTable('sql_runner_t').set((eb) => ({ n: eb('n', '+', 1) })).where('id', '=', id).compile();
      try {
        await db.insertInto('sql_runner_t').values({ id: 'w-taken', flag: true, n: 0 }).execute();
        const { value: outcomes, trips: sent } = await trips(() =>
          Promise.allSettled([inSharedRoundTrip(t.db, [insert('w-new', 1)] as const), inSharedRoundTrip(t.db, [insert('w-taken', 2)] as const), inSharedRoundTrip(t.db, [bump('w-new')] as const)]),
        );
        expect(outcomes.map((o) => (o.status === 'fulfilled' ? Number(o.value[0].numAffectedRows) : (o.reason as { code?: string }).code))).to.deep.equal([
          1,
          t.kind === 'postgres' ? '23505' : 'SQLITE_CONSTRAINT_PRIMARYKEY',
          1,
        ]);
        expect(sent).to.equal(t.kind === 'postgres' ? 1 : 3);
        const rows = await db.selectFrom('sql_runner_t').select(['id', 'n']).where('id', 'like', 'w-%').orderBy('id').execute();
        expect(rows).to.deep.equal([
          { id: 'w-new', n: 2 },
          { id: 'w-taken', n: 0 },
        ]);
      } finally {
        await db.deleteFrom('sql_runner_t').where('id', 'like', 'w-%').execute();
      }
    });

    if (t.kind === 'postgres') {
      it("PostgreSQL: reads planned once 'also alone' share a transaction across calls; when one fails, the others run again alone and get their results", async () => {
        const once = (q: CompiledQuery<{ v: number }>, name: string) => alsoAlone(named(q, name, true));
        const { value: outcomes, trips: sent } = await trips(() =>
          Promise.allSettled([
            inSharedRoundTrip(t.db, [once(valueOf(t.db, 1), 'shared_trip_once_value')] as const),
            inSharedRoundTrip(t.db, [once(raw<{ v: number }>`select 1 / cast(${0} as integer) as v`.compile(t.db), 'shared_trip_once_fails')] as const),
            inSharedRoundTrip(t.db, [once(valueOf(t.db, 3), 'shared_trip_once_value')] as const),
          ]),
        );
        expect(outcomes.map((o) => (o.status === 'fulfilled' ? values(o.value) : (o.reason as Error).message))).to.deep.equal([[1], 'division by zero', [3]]);
        // The shared round trip, then the failing call and the one after it in that transaction alone (the first had its answer before).
        expect(sent).to.equal(3);
      });
    }

    if (t.kind === 'postgres') {
      it('PostgreSQL: with the database out of reach, every call of the turn fails with that one failure (none is tried again alone)', async () => {
        const unreachable = createDb({ url: 'postgres://postgres@127.0.0.1:1/test', dataDir: '.', poolMax: 2 });
        try {
          const outcomes = await Promise.allSettled([inSharedRoundTrip(unreachable, [valueOf(unreachable, 1)] as const), inSharedRoundTrip(unreachable, [valueOf(unreachable, 2)] as const)]);
          const [first, second] = outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error) : undefined));
          expect(isDatabaseUnavailable(first)).to.equal(true);
          expect(second).to.equal(first);
        } finally {
          await unreachable.destroy();
        }
      });
    }
  });

  describe('inSharedTransaction', () => {
    const trips = async <T>(fn: () => Promise<T>) => {
      const before = poolStats(t.db).roundTrips;
      const value = await fn();
      return { value, trips: poolStats(t.db).roundTrips - before };
    };
    afterEach(() => db.deleteFrom('sql_runner_t').execute());

    it('calls made together share one transaction on PostgreSQL: their statements go out as issued and one COMMIT carries every write; each settles with its own result once committed', async () => {
      const other = tables(t.open());
      const before = sharedTransactionStats(t.db);
      const { value: results, trips: sent } = await trips(() =>
        Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            inSharedTransaction(t.db, [`s${i}`], async (trx) => {
              const before = await tables(trx).selectFrom('sql_runner_t').select('id').where('id', 'like', 's%').execute();
              await writeBehind(trx, insertRow(trx, `s${i}`));
              const seen = await other.selectFrom('sql_runner_t').select('id').where('id', 'like', 's%').execute();
              return { i, before: before.length, seenOutside: seen.length };
            }),
          ),
        ),
      );
      expect(results.map((r) => r.i)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
      for (const r of results) expect(r.seenOutside, `call ${r.i}`).to.equal(0);
      expect(await ids('s')).to.deep.equal(['s0', 's1', 's2', 's3', 's4', 's5', 's6', 's7']);
      // A transaction each would be 16 round trips (each read with its BEGIN, each write with its
      // COMMIT); together: each call's read, then every write with the one COMMIT.
      if (t.kind === 'postgres') expect(sent).to.equal(9);
      // hearth_db_shared_transaction_calls_total; SQLite groups every transaction its own way.
      const after = sharedTransactionStats(t.db);
      expect(after.committed - before.committed).to.equal(t.kind === 'postgres' ? 8 : 0);
    });

    it('a call that throws gets its own error and stores nothing; every other call is stored once', async () => {
      let runs = 0;
      const results = await Promise.allSettled(
        ['f1', 'f2', 'f3', 'f4'].map((id) =>
          inSharedTransaction(t.db, [id], async (trx) => {
            runs++;
            await tables(trx).insertInto('sql_runner_t').values({ id, flag: true }).execute();
            if (id === 'f3') throw new Error('f3 fails');
            return id;
          }),
        ),
      );
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).to.deep.equal(['f1', 'f2', 'f3 fails', 'f4']);
      expect(await ids('f')).to.deep.equal(['f1', 'f2', 'f4']);
      // PostgreSQL: the group was rolled back and each call ran again in a transaction of its own.
      expect(runs).to.equal(t.kind === 'postgres' ? 8 : 4);
      if (t.kind === 'postgres') expect(sharedTransactionStats(t.db).rerun).to.be.at.least(4);
    });

    it('a call failing with an error it vouches wrote nothing (a refusal before its first write) fails alone: the others commit together, each run once', async () => {
      class Refusal extends Error {}
      let runs = 0;
      const before = sharedTransactionStats(t.db);
      const results = await Promise.allSettled(
        ['v1', 'v2', 'v3', 'v4'].map((id) =>
          inSharedTransaction(
            t.db,
            [id],
            async (trx) => {
              runs++;
              await tables(trx).selectFrom('sql_runner_t').select('id').execute();
              if (id === 'v2') throw new Refusal('v2 refused');
              await writeBehind(trx, insertRow(trx, id));
              return id;
            },
            (err) => err instanceof Refusal,
          ),
        ),
      );
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).to.deep.equal(['v1', 'v2 refused', 'v3', 'v4']);
      expect(await ids('v')).to.deep.equal(['v1', 'v3', 'v4']);
      expect(runs).to.equal(4);
      if (t.kind === 'postgres') expect(sharedTransactionStats(t.db).committed - before.committed).to.equal(4);
    });

    it('a failed statement of one call (a duplicate key) fails that call only', async () => {
      await db.insertInto('sql_runner_t').values({ id: 'd2', flag: true }).execute();
      const results = await Promise.allSettled(
        ['d1', 'd2', 'd3'].map((id) => inSharedTransaction(t.db, [id], (trx) => tables(trx).insertInto('sql_runner_t').values({ id, flag: false }).execute())),
      );
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect(((results[1] as PromiseRejectedResult).reason as { code?: string }).code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
      expect((await db.selectFrom('sql_runner_t').select(['id', 'flag']).where('id', 'like', 'd%').orderBy('id').execute()).map((r) => [r.id, Boolean(r.flag)])).to.deep.equal([
        ['d1', false],
        ['d2', true],
        ['d3', false],
      ]);
    });

    it('calls with a key in common run one after the other: each holds its locks against the other (no lost update)', async () => {
      await db.insertInto('sql_runner_t').values({ id: 'counter', flag: true, n: 0 }).execute();
      // In one transaction the lock would not hold the second call back: both would read 0.
      const increment = () =>
        inSharedTransaction(t.db, ['counter'], async (trx) => {
          await lockUntilCommit(trx, 'sql-test-counter');
          const row = await tables(trx).selectFrom('sql_runner_t').select('n').where('id', '=', 'counter').executeTakeFirstOrThrow();
          await new Promise((r) => setImmediate(r));
          await tables(trx).updateTable('sql_runner_t').set({ n: row.n! + 1 }).where('id', '=', 'counter').execute();
        });
      await Promise.all([increment(), increment(), increment()]);
      expect(await db.selectFrom('sql_runner_t').select('n').where('id', '=', 'counter').executeTakeFirst()).to.deep.equal({ n: 3 });
    });
  });

  it('locks rows read for update or share on PostgreSQL only', () => {
    const query = (mode: 'update' | 'share') => db.selectFrom('sql_runner_t').select('id').$call(lockRows(t.db, mode)).compile().sql;
    expect(query('update')).to.satisfy((s: string) => (t.kind === 'postgres' ? s.endsWith(' for update') : !s.includes(' for ')));
    expect(query('share')).to.satisfy((s: string) => (t.kind === 'postgres' ? s.endsWith(' for share') : !s.includes(' for ')));
  });
});

describe('SQLite group commit', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Kysely<Tables>;
  before(async () => {
    t = await createTestDatabase('sqlite');
    db = tables(t.db);
    await db.schema.createTable('gc_parent').addColumn('id', 'varchar(64)', (c) => c.notNull().primaryKey()).execute();
    await db.schema
      .createTable('gc_child')
      .addColumn('id', 'varchar(64)', (c) => c.notNull().primaryKey())
      .addColumn('parent_id', 'varchar(64)', (c) => c.references('gc_parent.id'))
      .execute();
  });
  after(() => t.drop());

  it('a COMMIT that fails fails every call of its group, and stores nothing of it', async () => {
    const results = await Promise.allSettled([
      inTransaction(t.db, (trx) => tables(trx).insertInto('gc_parent').values({ id: 'kept?' }).execute()),
      inTransaction(t.db, async (trx) => {
        // A foreign key checked only at COMMIT: the whole group's COMMIT fails.
        await raw`pragma defer_foreign_keys = on`.execute(trx);
        return tables(trx).insertInto('gc_child').values({ id: 'orphan', parent_id: 'missing' }).execute();
      }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    for (const r of results) expect(((r as PromiseRejectedResult).reason as { code?: string }).code).to.equal('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(await db.selectFrom('gc_parent').select('id').execute()).to.deep.equal([]);
    expect(await db.selectFrom('gc_child').select('id').execute()).to.deep.equal([]);
    // The next group commits normally.
    await inTransaction(t.db, (trx) => tables(trx).insertInto('gc_parent').values({ id: 'after' }).execute());
    expect(await db.selectFrom('gc_parent').select('id').execute()).to.deep.equal([{ id: 'after' }]);
  });
});
