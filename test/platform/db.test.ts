import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { CHECKPOINT_INTERVAL_MS, FOREGROUND_CHECKPOINT_PAGES } from '../../src/platform/db/checkpointer.ts';
import { createDb, sqliteFile } from '../../src/platform/db/index.ts';
import { sqlOf } from '../../src/platform/db/sql.ts';
import { createTestDatabase, TEST_DATABASE_URL } from '../helpers/databases.ts';

describe('SQLite prepared-statement cache', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    t = await createTestDatabase('sqlite');
    await t.db.schema.createTable('t', (table) => {
      table.integer('id').primary();
      table.string('name');
    });
  });
  after(() => t.drop());

  it('reuses one statement per SQL text on a connection', async () => {
    const conn = await t.db.client.acquireConnection();
    try {
      expect(conn.prepare('select * from t where id = ?')).to.equal(conn.prepare('select * from t where id = ?'));
      expect(conn.prepare('select * from t where id = ?')).to.not.equal(conn.prepare('select id from t where id = ?'));
    } finally {
      await t.db.client.releaseConnection(conn);
    }
  });

  it('a cached statement sees new rows and a changed schema', async () => {
    await t.db('t').insert({ id: 1, name: 'a' });
    expect(await t.db('t').select('*')).to.deep.equal([{ id: 1, name: 'a' }]);
    await t.db('t').insert({ id: 2, name: 'b' });
    await t.db.schema.alterTable('t', (table) => table.string('extra').defaultTo('x'));
    expect(await t.db('t').select('*').orderBy('id')).to.deep.equal([
      { id: 1, name: 'a', extra: 'x' },
      { id: 2, name: 'b', extra: 'x' },
    ]);
  });
});

describe('SQLite commits', () => {
  it('run at synchronous NORMAL from the first statement, on a new database as on one opened again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-sync-'));
    const level = async () => {
      const db = createDb({ dataDir: dir, poolMax: 1 });
      try {
        return (await sqlOf(db).one<{ synchronous: number }>('pragma synchronous'))?.synchronous;
      } finally {
        await db.destroy();
      }
    };
    try {
      // Left to the driver, a new file reads FULL (2) until its first transaction.
      expect(await level()).to.equal(1);
      expect(await level()).to.equal(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite checkpoints in a worker thread', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  const file = () => sqliteFile(t.url, '.');
  before(async () => {
    t = await createTestDatabase('sqlite');
    await t.db.schema.createTable('blobs', (table) => {
      table.integer('id').primary();
      table.text('body');
    });
  });
  after(() => t.drop());

  it('leaves commits to append to the log and copies the log into the database file off the request path', async () => {
    const conn = await t.db.client.acquireConnection();
    try {
      expect(conn.pragma('wal_autocheckpoint', { simple: true })).to.equal(FOREGROUND_CHECKPOINT_PAGES);
    } finally {
      await t.db.client.releaseConnection(conn);
    }
    const before = statSync(file()).size;
    // About 2 MB in 500 commits: far below the request connection's own checkpoint mark.
    for (let i = 0; i < 500; i++) await t.db('blobs').insert({ id: i, body: 'x'.repeat(4000) });
    const deadline = Date.now() + 20 * CHECKPOINT_INTERVAL_MS;
    while (statSync(file()).size < before + 2_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, CHECKPOINT_INTERVAL_MS));
    expect(statSync(file()).size).to.be.greaterThan(before + 2_000_000);
    expect(await t.db('blobs').count({ n: '*' }).first()).to.deep.equal({ n: 500 });
  });

  it('copies each commit in the pause before the next, so a steady stream of commits keeps restarting the log', async () => {
    // About 600 KB every 15 ms (40 MB/s, as claim submissions write in make bench): more than
    // a checkpoint every 200 ms could copy in one pause, so the log would grow to the bound.
    const wal = () => statSync(`${file()}-wal`).size;
    const row = 'y'.repeat(4000);
    let largest = 0;
    for (let commit = 0; commit < 80; commit++) {
      const rows = Array.from({ length: 150 }, (_, i) => ({ id: 10_000 + commit * 150 + i, body: row }));
      await t.db.transaction((trx) => trx('blobs').insert(rows));
      largest = Math.max(largest, wal());
      await new Promise((r) => setTimeout(r, 15));
    }
    // 48 MB were written; the log file (never shrunk) shows the most it ever held at once.
    expect(largest).to.be.below(16 * 1024 * 1024);
    expect(await t.db('blobs').where('id', '>=', 10_000).count({ n: '*' }).first()).to.deep.equal({ n: 12_000 });
  });
});

describe('a database that cannot be reached, on the command line', () => {
  const migrate = (url: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'migrate'], { env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8', timeout: 30_000 });

  it('is one line naming the problem, and exit status 1', () => {
    const run = migrate('postgres://postgres@127.0.0.1:1/hearth');
    expect(run.status).to.equal(1);
    expect(run.stderr.trim().split('\n')).to.have.length(1);
    expect(run.stderr).to.match(/^Cannot reach the database \(ECONNREFUSED\).*Check DATABASE_URL/);
  });

  if (TEST_DATABASE_URL) {
    it('a database that does not exist says so', () => {
      const url = new URL(TEST_DATABASE_URL!);
      url.pathname = '/hearth_no_such_database';
      const run = migrate(url.toString());
      expect(run.status).to.equal(1);
      expect(run.stderr.trim().split('\n')).to.have.length(1);
      expect(run.stderr).to.match(/^The database does not exist: .*hearth_no_such_database.*createdb/);
    });
  }
});
