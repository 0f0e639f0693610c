import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { CHECKPOINT_INTERVAL_MS, FOREGROUND_CHECKPOINT_PAGES } from '../../src/platform/db/checkpointer.ts';
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

describe('SQLite checkpoints in a worker thread', () => {
  let dir: string;
  let db: Db;
  const file = () => join(dir, 'x.sqlite');
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-db-'));
    db = createDb({ url: `sqlite:${file()}`, dataDir: dir, poolMax: 1 });
    await db.schema.createTable('blobs', (t) => {
      t.integer('id').primary();
      t.text('body');
    });
  });
  after(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves commits to append to the log and copies the log into the database file off the request path', async () => {
    const conn = await db.client.acquireConnection();
    try {
      expect(conn.pragma('wal_autocheckpoint', { simple: true })).to.equal(FOREGROUND_CHECKPOINT_PAGES);
    } finally {
      await db.client.releaseConnection(conn);
    }
    const before = statSync(file()).size;
    // About 2 MB in 500 commits: far below the request connection's own checkpoint mark.
    for (let i = 0; i < 500; i++) await db('blobs').insert({ id: i, body: 'x'.repeat(4000) });
    const deadline = Date.now() + 20 * CHECKPOINT_INTERVAL_MS;
    while (statSync(file()).size < before + 2_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, CHECKPOINT_INTERVAL_MS));
    expect(statSync(file()).size).to.be.greaterThan(before + 2_000_000);
    expect(await db('blobs').count({ n: '*' }).first()).to.deep.equal({ n: 500 });
  });
});
