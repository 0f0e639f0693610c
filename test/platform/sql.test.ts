import { expect } from 'chai';
import { forUpdate, inTransaction, insertInto, sqlOf, updateWhere } from '../../src/platform/db/sql.ts';
import { createTestDatabase, forEachDatabase } from '../helpers/databases.ts';

describe('plain SQL statements (insertInto, updateWhere)', () => {
  it('leave out undefined columns and quote column names', () => {
    expect(insertInto('t', { id: 'a', flag: true, note: undefined, n: null })).to.deep.equal([
      'insert into t ("id", "flag", "n") values (?, ?, ?)',
      ['a', true, null],
    ]);
    expect(updateWhere('t', { n: 2, note: undefined }, { id: 'a', version: 3 })).to.deep.equal([
      'update t set "n" = ? where "id" = ? and "version" = ?',
      [2, 'a', 3],
    ]);
  });
});

forEachDatabase('plain SQL runner (sqlOf)', (t) => {
  before(async () => {
    await t.db.schema.createTable('sql_runner_t', (table) => {
      table.string('id').primary();
      table.boolean('flag').notNullable();
      table.integer('n').nullable();
    });
  });

  it('reads, writes and counts changed rows, binding booleans', async () => {
    const sql = sqlOf(t.db);
    expect(sql.dialect).to.equal(t.kind);
    expect(await sql.run(...insertInto('sql_runner_t', { id: 'a', flag: true, n: 1 }))).to.equal(1);
    expect(await sql.run(...insertInto('sql_runner_t', { id: 'b', flag: false, n: 2 }))).to.equal(1);
    const a = await sql.one<{ id: string; flag: boolean | number; n: number }>('select * from sql_runner_t where id = ?', ['a']);
    expect(a?.id).to.equal('a');
    expect(Boolean(a?.flag)).to.equal(true);
    expect(await sql.one('select * from sql_runner_t where id = ?', ['none'])).to.equal(undefined);
    expect((await sql.all<{ id: string }>('select id from sql_runner_t order by id')).map((r) => r.id)).to.deep.equal(['a', 'b']);
    expect(await sql.run(...updateWhere('sql_runner_t', { n: 5 }, { flag: false }))).to.equal(1);
    expect(await sql.run('update sql_runner_t set n = ? where id = ?', [9, 'none'])).to.equal(0);
    expect(await sql.run('delete from sql_runner_t where n >= ?', [0])).to.equal(2);
  });

  it('surfaces constraint violations as the driver reports them', async () => {
    const sql = sqlOf(t.db);
    await sql.run(...insertInto('sql_runner_t', { id: 'dup', flag: true }));
    let error: unknown;
    try {
      await sql.run(...insertInto('sql_runner_t', { id: 'dup', flag: true }));
    } catch (err) {
      error = err;
    }
    expect((error as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
    await sql.run('delete from sql_runner_t');
  });

  it('runs inside a transaction it is given, and a statement outside never sees that transaction uncommitted', async () => {
    let outside: Promise<{ n: number | string } | undefined> | undefined;
    await t.db
      .transaction(async (trx) => {
        const inside = sqlOf(trx);
        await inside.run(...insertInto('sql_runner_t', { id: 'tx', flag: true }));
        expect(await inside.one('select id from sql_runner_t where id = ?', ['tx'])).to.deep.equal({ id: 'tx' });
        // On SQLite this waits for the pool's only connection until the transaction is over.
        outside = sqlOf(t.db).one<{ n: number | string }>('select count(*) as n from sql_runner_t');
        throw new Error('roll back');
      })
      .catch((err: Error) => expect(err.message).to.equal('roll back'));
    expect(Number((await outside)!.n)).to.equal(0);
    expect(await sqlOf(t.db).one('select id from sql_runner_t where id = ?', ['tx'])).to.equal(undefined);
  });

  it('inTransaction commits what fn wrote when it resolves', async () => {
    const result = await inTransaction(t.db, async (sql) => {
      await sql.run(...insertInto('sql_runner_t', { id: 'c1', flag: true }));
      await sql.run(...insertInto('sql_runner_t', { id: 'c2', flag: false }));
      return (await sql.all('select id from sql_runner_t where id like ?', ['c%'])).length;
    });
    expect(result).to.equal(2);
    expect((await sqlOf(t.db).all('select id from sql_runner_t where id like ?', ['c%'])).length).to.equal(2);
  });

  it('inTransaction rolls back every write when fn throws, also after a failed statement', async () => {
    let caught: unknown;
    try {
      await inTransaction(t.db, async (sql) => {
        await sql.run(...insertInto('sql_runner_t', { id: 'r1', flag: true }));
        await sql.run(...insertInto('sql_runner_t', { id: 'c1', flag: true }));
      });
    } catch (err) {
      caught = err;
    }
    expect((caught as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
    expect(await sqlOf(t.db).one('select id from sql_runner_t where id = ?', ['r1'])).to.equal(undefined);
    // The connection is usable again and not left inside a transaction.
    await sqlOf(t.db).run(...insertInto('sql_runner_t', { id: 'r2', flag: true }));
    await t.db.transaction(async (trx) => sqlOf(trx).run('delete from sql_runner_t where id in (?, ?, ?)', ['c1', 'c2', 'r2']));
    expect(await sqlOf(t.db).all('select id from sql_runner_t')).to.deep.equal([]);
  });

  it('concurrent transactions each see the other only once committed (read-modify-write keeps every increment)', async () => {
    await sqlOf(t.db).run(...insertInto('sql_runner_t', { id: 'counter', flag: true, n: 0 }));
    await Promise.all(
      Array.from({ length: 20 }, () =>
        inTransaction(t.db, async (sql) => {
          const row = await sql.one<{ n: number }>(`select n from sql_runner_t where id = ?${forUpdate(sql)}`, ['counter']);
          await new Promise((r) => setImmediate(r));
          await sql.run(...updateWhere('sql_runner_t', { n: row!.n + 1 }, { id: 'counter' }));
        }),
      ),
    );
    expect(await sqlOf(t.db).one('select n from sql_runner_t where id = ?', ['counter'])).to.deep.equal({ n: 20 });
    await sqlOf(t.db).run('delete from sql_runner_t');
  });

  it('calls sent together each keep their own outcome: one throwing undoes only its writes; each settles with its writes visible to another connection', async () => {
    const other = t.open();
    try {
      const results = await Promise.allSettled(
        ['g1', 'g2', 'g3', 'g4'].map((id) =>
          inTransaction(t.db, async (sql) => {
            await sql.run(...insertInto('sql_runner_t', { id, flag: true }));
            if (id === 'g3') throw new Error('g3 fails');
            const seen = await sqlOf(other).one('select id from sql_runner_t where id = ?', [id]);
            return { id, seenBeforeCommit: seen !== undefined };
          }),
        ),
      );
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      for (const r of results) if (r.status === 'fulfilled') expect(r.value.seenBeforeCommit, r.value.id).to.equal(false);
      expect((await sqlOf(other).all<{ id: string }>("select id from sql_runner_t where id like 'g%' order by id")).map((r) => r.id)).to.deep.equal(['g1', 'g2', 'g4']);
    } finally {
      await sqlOf(t.db).run("delete from sql_runner_t where id like 'g%'");
    }
  });

  it('locks rows read for update on PostgreSQL only', () => {
    expect(forUpdate(sqlOf(t.db))).to.equal(t.kind === 'postgres' ? ' for update' : '');
  });
});

describe('SQLite group commit', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    t = await createTestDatabase('sqlite');
    await t.db.schema.createTable('gc_parent', (table) => table.string('id').primary());
    await t.db.schema.createTable('gc_child', (table) => {
      table.string('id').primary();
      table.string('parent_id').references('id').inTable('gc_parent');
    });
  });
  after(() => t.drop());

  it('a COMMIT that fails fails every call of its group, and stores nothing of it', async () => {
    const results = await Promise.allSettled([
      inTransaction(t.db, (sql) => sql.run(...insertInto('gc_parent', { id: 'kept?' }))),
      inTransaction(t.db, async (sql) => {
        // A foreign key checked only at COMMIT: the whole group's COMMIT fails.
        await sql.run('pragma defer_foreign_keys = on');
        return sql.run(...insertInto('gc_child', { id: 'orphan', parent_id: 'missing' }));
      }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    for (const r of results) expect(((r as PromiseRejectedResult).reason as { code?: string }).code).to.equal('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(await sqlOf(t.db).all('select id from gc_parent')).to.deep.equal([]);
    expect(await sqlOf(t.db).all('select id from gc_child')).to.deep.equal([]);
    // The next group commits normally.
    await inTransaction(t.db, (sql) => sql.run(...insertInto('gc_parent', { id: 'after' })));
    expect(await sqlOf(t.db).all('select id from gc_parent')).to.deep.equal([{ id: 'after' }]);
  });
});
