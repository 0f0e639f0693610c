import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { expect } from 'chai';
import { ConfigError, configWith } from '../../src/config.ts';
import { Migrator, sql, type Kysely } from 'kysely';
import { CHECKPOINT_INTERVAL_MS, FOREGROUND_CHECKPOINT_PAGES } from '../../src/platform/db/checkpointer.ts';
import { createDb, createDbFromConfig, sqliteFile, type Db } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { migrationProvider } from '../../src/platform/db/migrations/index.ts';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { ClaimRepository } from '../../src/twins/claims.repository.ts';
import { createTestDatabase, forEachDatabase, TEST_DATABASE_URL } from '../helpers/databases.ts';
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

describe('migrations', () => {
  it('adopt the history of a database migrated by Hearth under Knex: nothing is applied twice, later ones are, and its rows stay', async () => {
    // test/fixtures/knex-era.sqlite: every migration of the time applied by Knex, and one API key.
    const dir = mkdtempSync(join(tmpdir(), 'hearth-knex-era-'));
    const file = join(dir, 'hearth.sqlite');
    copyFileSync('test/fixtures/knex-era.sqlite', file);
    const db = createDb({ url: `sqlite:${file}`, dataDir: dir, poolMax: 1 });
    try {
      // Only the migrations written since that database was made are applied.
      const since = Object.keys(await migrationProvider.getMigrations()).filter((name) => name > '400_agent_user_preferences');
      expect(since).to.include('401_ussd_household_without_customer_id');
      expect(await migrateLatest(db)).to.deep.equal(since);
      expect(await db.selectFrom('api_keys').select(['id', 'name']).execute()).to.deep.equal([{ id: 'k1', name: 'legacy' }]);
      const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db);
      expect(rows.map((r) => r.name)).to.include.members(['001_platform_api_keys', '400_agent_user_preferences']);
      // And it goes on working: a second start applies nothing either.
      expect(await migrateLatest(db)).to.deep.equal([]);
      // From then on Kysely's history is the only one: a migration of Knex's time undone is applied again, not re-adopted as applied.
      const names = Object.keys(await migrationProvider.getMigrations());
      const beforeLastOfKnex = names[names.indexOf('400_agent_user_preferences') - 1]!;
      expect((await new Migrator({ db, provider: migrationProvider }).migrateTo(beforeLastOfKnex)).error).to.equal(undefined);
      expect(await migrateLatest(db)).to.deep.equal(['400_agent_user_preferences', ...since]);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('migration 404: who may submit into a collection', () => {
  it('a collection keeps the principals already submitting into it as its submitters; default is open to all', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-404-'));
    const db = createDb({ url: `sqlite:${join(dir, 'hearth.sqlite')}`, dataDir: dir, poolMax: 1 });
    try {
      const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo('403_ussd_earlier_texts');
      expect(error).to.equal(undefined);
      const at = '2026-03-05T08:30:00.000Z';
      await db.insertInto('kpt_collections').values({ id: 'kisumu', name: 'Kisumu', description: null, selection_method: 'Random draw', created_by: 'did:ixo:entity:creator', created_at: at }).execute();
      const claim = (id: string, by: string) => ({
        id, claim_key: id, collection_id: 'kisumu', household_did: `did:ixo:entity:${id}`, test_group: 'reference', status: 'pending', start_date: null, end_date: null, days: 3, total_kg: 3,
        daily_logs: '[1,1,1]', body: '{}', claim_cid: 'x', checks: '[]', reasons: '[]', credential: null, verifiable_credential: null, submitted_by: by, created_at: at, updated_at: at, verified_at: null, status_list_index: null,
      });
      for (const [id, by] of [['c1', 'did:ixo:entity:creator'], ['c2', 'did:ixo:entity:gateway'], ['c3', 'did:ixo:entity:agent'], ['c4', 'did:ixo:entity:gateway']]) {
        await db.insertInto('kpt_claims').values(claim(id!, by!)).execute();
      }
      await migrateLatest(db);
      const rows = await db.selectFrom('kpt_collections').select(['id', 'submitters', 'open_to_all']).orderBy('id').execute();
      expect(rows.map((r) => [r.id, JSON.parse(r.submitters) as string[], Boolean(r.open_to_all)])).to.deep.equal([
        ['default', [], true],
        ['kisumu', ['did:ixo:entity:agent', 'did:ixo:entity:gateway'], false],
        ['ussd', [], false],
      ]);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

forEachDatabase('migration 405: a credential\'s status on its claim\'s row', (t) => {
  const at = '2026-03-05T08:30:00.000Z';
  const migrator = () => new Migrator({ db: t.db, provider: migrationProvider, migrationTableSchema: t.schema });
  const claim = (id: string, index: number | null) => ({
    id, claim_key: id, collection_id: 'default', household_did: `did:ixo:entity:${id}`, test_group: 'reference', status: index === null ? 'pending' : 'verified', start_date: null, end_date: null, days: 3,
    total_kg: 3, daily_logs: '[1,1,1]', body: '{}', claim_cid: 'x', checks: '[]', reasons: '[]', credential: null, verifiable_credential: null, submitted_by: 'did:ixo:entity:s', created_at: at,
    updated_at: at, verified_at: null, status_list_index: index,
  });
  const statuses = [
    { status_list_index: 1, claim_id: 'revoked', revoked: true, suspended: false, updated_at: '2026-03-06T00:00:00.000Z' },
    { status_list_index: 2, claim_id: 'suspended', revoked: false, suspended: true, updated_at: '2026-03-07T00:00:00.000Z' },
    { status_list_index: 3, claim_id: 'reinstated', revoked: false, suspended: false, updated_at: '2026-03-08T00:00:00.000Z' },
  ];
  const asStored = (r: Record<string, unknown>) => ({ ...r, revoked: Boolean(r.revoked), suspended: Boolean(r.suspended) });

  it('moves every status row onto its claim, leaves the others standing, and its down migration gives the rows back', async () => {
    const db = t.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
    expect((await migrator().migrateTo('404_collection_submitters')).error).to.equal(undefined);
    for (const [id, index] of [['revoked', 1], ['suspended', 2], ['reinstated', 3], ['standing', 4], ['pending', null]] as const) await db.insertInto('kpt_claims').values(claim(id, index)).execute();
    await db.insertInto('twin_credential_statuses').values(statuses).execute();

    await migrateLatest(t.db);
    const rows = await db.selectFrom('kpt_claims').select(['id', 'credential_revoked', 'credential_suspended', 'credential_status_changed_at']).orderBy('id').execute();
    expect(rows.map((r) => [r.id, Boolean(r.credential_revoked), Boolean(r.credential_suspended), r.credential_status_changed_at])).to.deep.equal([
      ['pending', false, false, null],
      ['reinstated', false, false, '2026-03-08T00:00:00.000Z'],
      ['revoked', true, false, '2026-03-06T00:00:00.000Z'],
      ['standing', false, false, null],
      ['suspended', false, true, '2026-03-07T00:00:00.000Z'],
    ]);

    expect((await migrator().migrateTo('404_collection_submitters')).error).to.equal(undefined);
    const back = await db.selectFrom('twin_credential_statuses').selectAll().orderBy('status_list_index').execute();
    expect(back.map(asStored)).to.deep.equal(statuses);
    await migrateLatest(t.db);
  });
});

forEachDatabase('migrations renamed after some database applied them', (t) => {
  it('a history naming 207_ussd_household_without_customer_id (its first name) is moved to 401: nothing runs again, start-up goes on', async () => {
    await sql`update kysely_migration set name = '207_ussd_household_without_customer_id' where name = '401_ussd_household_without_customer_id'`.execute(t.db);
    expect(await migrateLatest(t.db)).to.deep.equal([]);
    const names = (await sql<{ name: string }>`select name from kysely_migration`.execute(t.db)).rows.map((r) => r.name);
    expect(names).to.include('401_ussd_household_without_customer_id');
    expect(names).to.not.include('207_ussd_household_without_customer_id');
  });
});

if (TEST_DATABASE_URL) {
  describe('migrations [postgres]', () => {
    let t: Awaited<ReturnType<typeof createTestDatabase>>;
    before(async () => {
      t = await createTestDatabase('postgres');
    });
    after(() => t.drop());

    it('adopt a Knex history in their own schema, whatever other schemas of the database hold', async () => {
      // As Knex left a database: its history table, and none of Kysely's.
      const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(t.db);
      await sql`create table knex_migrations (id serial primary key, name varchar(255), batch integer, migration_time timestamptz)`.execute(t.db);
      for (const { name } of rows) await sql`insert into knex_migrations (name, batch, migration_time) values (${name}, 1, now())`.execute(t.db);
      await sql`drop table kysely_migration, kysely_migration_lock`.execute(t.db);
      expect(await migrateLatest(t.db)).to.deep.equal([]);
      expect((await sql<{ name: string }>`select name from kysely_migration order by name`.execute(t.db)).rows).to.deep.equal(rows);
    });

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
      const definition = async () =>
        (await sql<{ indexdef: string }>`select indexdef from pg_indexes where schemaname = current_schema() and indexname = 'kpt_claims_collection_tx_seq_index'`.execute(t.db)).rows[0]!.indexdef;
      expect(await definition()).to.match(/\(collection_id, tx, seq\) WHERE \(tx IS NOT NULL\)$/);
      const migrator = new Migrator({ db: t.db, provider: migrationProvider, migrationTableSchema: t.schema });
      expect((await migrator.migrateTo('406_twins_claim_lz4')).error).to.equal(undefined);
      expect(await definition()).to.match(/\(collection_id, tx, seq\)$/);
      expect((await migrator.migrateToLatest()).error).to.equal(undefined);
      expect(await definition()).to.match(/WHERE \(tx IS NOT NULL\)$/);
    });

    it('compress the large text columns of claims with lz4 where the server has it (migration 406); its down migration restores the default', async () => {
      const { lz4 } = (await sql<{ lz4: boolean }>`select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`.execute(t.db)).rows[0]!;
      const methods = async () =>
        (await sql<{ attcompression: string }>`select attcompression from pg_attribute where attrelid = 'kpt_claims'::regclass
          and attname in ('body', 'checks', 'reasons', 'credential', 'verifiable_credential') order by attname`.execute(t.db)).rows.map((r) => r.attcompression);
      // '' is the server's default_toast_compression (pglz unless it is set otherwise).
      expect(await methods()).to.deep.equal(Array(5).fill(lz4 ? 'l' : ''));
      const { error } = await new Migrator({ db: t.db, provider: migrationProvider, migrationTableSchema: t.schema }).migrateTo('405_twins_credential_status_on_claims');
      expect(error).to.equal(undefined);
      expect(await methods()).to.deep.equal(Array(5).fill(''));
      await migrateLatest(t.db);
    });

    it("keep each schema's history in that schema: a second deployment in the same database migrates from scratch", async () => {
      const other = await createTestDatabase('postgres');
      try {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(other.db);
        expect(rows[0]!.n).to.equal((await migrateLatest(t.db)).length + (await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(t.db)).rows[0]!.n);
      } finally {
        await other.drop();
      }
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
