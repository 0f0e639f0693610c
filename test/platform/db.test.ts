import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { expect } from 'chai';
import { ConfigError, configWith } from '../../src/config.ts';
import { sql, type Kysely } from 'kysely';
import { CHECKPOINT_INTERVAL_MS, FOREGROUND_CHECKPOINT_PAGES } from '../../src/platform/db/checkpointer.ts';
import { createDb, createDbFromConfig, sqliteFile, type Db } from '../../src/platform/db/index.ts';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { ClaimRepository } from '../../src/twins/claims.repository.ts';
import { createTestDatabase, TEST_DATABASE_URL } from '../helpers/databases.ts';
import { explainPrepared } from '../helpers/plans.ts';

/** The test's own tables, beside the migrated ones. */
interface Tables {
  t: { id: number; name: string | null; extra?: string };
  blobs: { id: number; body: string };
}
const tables = (db: Db) => db as unknown as Kysely<Tables>;

describe('SQLite prepared-statement cache', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Kysely<Tables>;
  before(async () => {
    t = await createTestDatabase('sqlite');
    db = tables(t.db);
    await db.schema.createTable('t').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('name', 'varchar(255)').execute();
  });
  after(() => t.drop());

  it('prepares each SQL text once on a connection', async () => {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- put back below, and called with its own `this`
    const prepare = BetterSqlite3.prototype.prepare;
    const prepared: string[] = [];
    BetterSqlite3.prototype.prepare = function (this: BetterSqlite3.Database, source: string) {
      prepared.push(source);
      return prepare.call(this, source);
    } as typeof prepare;
    try {
      for (let i = 0; i < 3; i++) await db.selectFrom('t').selectAll().where('id', '=', i).execute();
      await db.selectFrom('t').select('id').where('id', '=', 1).execute();
    } finally {
      BetterSqlite3.prototype.prepare = prepare;
    }
    expect(prepared).to.deep.equal(['select * from "t" where "id" = ?', 'select "id" from "t" where "id" = ?']);
  });

  it('a cached statement sees new rows and a changed schema', async () => {
    await db.insertInto('t').values({ id: 1, name: 'a' }).execute();
    expect(await db.selectFrom('t').selectAll().execute()).to.deep.equal([{ id: 1, name: 'a' }]);
    await db.insertInto('t').values({ id: 2, name: 'b' }).execute();
    await db.schema.alterTable('t').addColumn('extra', 'varchar(255)', (c) => c.defaultTo('x')).execute();
    expect(await db.selectFrom('t').selectAll().orderBy('id').execute()).to.deep.equal([
      { id: 1, name: 'a', extra: 'x' },
      { id: 2, name: 'b', extra: 'x' },
    ]);
  });
});

describe('the database the configuration names', () => {
  it('a DATA_DIR (or sqlite: path) that cannot hold the SQLite file is invalid configuration naming the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-not-a-dir-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    try {
      expect(() => createDbFromConfig(configWith({ DATA_DIR: join(file, 'data') }))).to.throw(ConfigError, `Invalid configuration:\n  DATA_DIR: cannot hold the SQLite database: ENOTDIR at ${join(file, 'data')}`);
      expect(() => createDbFromConfig(configWith({ DATABASE_URL: `sqlite:${join(file, 'x', 'h.sqlite')}` }))).to.throw(ConfigError, /^Invalid configuration:\n {2}DATABASE_URL: cannot hold the SQLite database: ENOTDIR/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

if (TEST_DATABASE_URL) {
  describe('migration 407 [postgres]', () => {
    let t: Awaited<ReturnType<typeof createTestDatabase>>;
    before(async () => {
      t = await createTestDatabase('postgres');
    });
    after(() => t.drop());

    it("keep the followers' index of a collection's claims to the statements that page in commit order (migration 407): a partner read planned once reads its group's index", async () => {
      const indexes = (plan: unknown): string[] => {
        if (Array.isArray(plan)) return plan.flatMap(indexes);
        if (!plan || typeof plan !== 'object') return [];
        const node = plan as Record<string, unknown>;
        return [...(typeof node['Index Name'] === 'string' ? [node['Index Name']] : []), ...Object.values(node).flatMap(indexes)];
      };
      // The partner read as a submission runs it, then its plan as kept (made once, from indexes), on an empty table.
      const partnerReadPlan = () =>
        inTransaction(t.db, async (trx) => {
          await new ClaimRepository(trx).householdAndPartners('did:ixo:entity:407', 'c407', 'reference', { start: '2026-01-01', end: '2026-01-03' });
          const explained = await explainPrepared(trx, '%aligned_pending%household_did%', { planOnce: true, options: '(format json)' });
          return [...new Set(indexes(explained))].sort();
        });
      expect(await partnerReadPlan()).to.deep.equal(['kpt_claims_collection_id_test_group_status_index', 'kpt_claims_household_did_index']);
    });
  });
}

describe('SQLite commits', () => {
  it('run at synchronous NORMAL from the first statement, on a new database as on one opened again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-sync-'));
    const level = async () => {
      const db = createDb({ dataDir: dir, poolMax: 1 });
      try {
        return (await sql<{ synchronous: number }>`pragma synchronous`.execute(db)).rows[0]?.synchronous;
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
    await tables(t.db).schema.createTable('blobs').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('body', 'text').execute();
  });
  after(() => t.drop());

  it('leaves commits to append to the log and copies the log into the database file off the request path', async () => {
    expect((await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(t.db)).rows[0]?.wal_autocheckpoint).to.equal(FOREGROUND_CHECKPOINT_PAGES);
    const before = statSync(file()).size;
    // About 2 MB in 500 commits: far below the request connection's own checkpoint mark.
    for (let i = 0; i < 500; i++) await tables(t.db).insertInto('blobs').values({ id: i, body: 'x'.repeat(4000) }).execute();
    const deadline = Date.now() + 20 * CHECKPOINT_INTERVAL_MS;
    while (statSync(file()).size < before + 2_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, CHECKPOINT_INTERVAL_MS));
    expect(statSync(file()).size).to.be.greaterThan(before + 2_000_000);
    expect(await tables(t.db).selectFrom('blobs').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst()).to.deep.equal({ n: 500 });
  });

  it('copies each commit in the pause before the next, so a steady stream of commits keeps restarting the log', async () => {
    // About 600 KB every 15 ms (40 MB/s, as claim submissions write in make bench): more than
    // a checkpoint every 200 ms could copy in one pause, so the log would grow to the bound.
    const wal = () => statSync(`${file()}-wal`).size;
    const row = 'y'.repeat(4000);
    let largest = 0;
    for (let commit = 0; commit < 80; commit++) {
      const rows = Array.from({ length: 150 }, (_, i) => ({ id: 10_000 + commit * 150 + i, body: row }));
      await inTransaction(t.db, (trx) => tables(trx).insertInto('blobs').values(rows).execute());
      largest = Math.max(largest, wal());
      await new Promise((r) => setTimeout(r, 15));
    }
    // 48 MB were written; the log file (never shrunk) shows the most it ever held at once.
    expect(largest).to.be.below(16 * 1024 * 1024);
    expect(await tables(t.db).selectFrom('blobs').where('id', '>=', 10_000).select((eb) => eb.fn.countAll().as('n')).executeTakeFirst()).to.deep.equal({ n: 12_000 });
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
