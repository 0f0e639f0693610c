import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createDb, type Db } from '../../src/platform/db/index.ts';

describe('SQLite prepared-statement cache', () => {
  let dir: string;
  let db: Db;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-db-'));
    db = createDb({ url: `sqlite:${join(dir, 'x.sqlite')}`, dataDir: dir, poolMax: 1 });
    await db.schema.createTable('t', (t) => {
      t.integer('id').primary();
      t.string('name');
    });
  });
  after(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reuses one statement per SQL text on a connection', async () => {
    const conn = await db.client.acquireConnection();
    try {
      expect(conn.prepare('select * from t where id = ?')).to.equal(conn.prepare('select * from t where id = ?'));
      expect(conn.prepare('select * from t where id = ?')).to.not.equal(conn.prepare('select id from t where id = ?'));
    } finally {
      await db.client.releaseConnection(conn);
    }
  });

  it('a cached statement sees new rows and a changed schema', async () => {
    await db('t').insert({ id: 1, name: 'a' });
    expect(await db('t').select('*')).to.deep.equal([{ id: 1, name: 'a' }]);
    await db('t').insert({ id: 2, name: 'b' });
    await db.schema.alterTable('t', (t) => t.string('extra').defaultTo('x'));
    expect(await db('t').select('*').orderBy('id')).to.deep.equal([
      { id: 1, name: 'a', extra: 'x' },
      { id: 2, name: 'b', extra: 'x' },
    ]);
  });
});
