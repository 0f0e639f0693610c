import { expect } from 'chai';
import { forUpdate, insertInto, sqlOf, updateWhere } from '../../src/platform/db/sql.ts';
import { forEachDatabase } from '../helpers/databases.ts';

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

  it('locks rows read for update on PostgreSQL only', () => {
    expect(forUpdate(sqlOf(t.db))).to.equal(t.kind === 'postgres' ? ' for update' : '');
  });
});
