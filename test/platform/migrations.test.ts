// The migrations and their runner (src/platform/db/migrate.ts): a fresh database, databases
// migrated by earlier Hearth versions (Knex, then Kysely: test/fixtures), and PostgreSQL schemas
// side by side in one database.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import { onPostgres } from '../../src/platform/db/dialect.ts';
import { migrateLatest, migrationConfig, migrationSource } from '../../src/platform/db/migrate.ts';
import { settleClaimAndEventOrder } from '../../src/twins/claims/claim-order.repository.ts';
import { twinsReadPort } from '../../src/twins/read-port.repository.ts';
import { USSD_COLLECTION_DESIGN, USSD_COLLECTION_SELECTION_METHOD } from '../../src/ussd/collections.ts';

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

/** A Knex handle on the database at `url` (`sqlite:<file>`, or PostgreSQL in `schema`). */
function open(url: string, schema?: string): Knex {
  return url.startsWith('sqlite:')
    ? knex({ client: 'better-sqlite3', connection: { filename: url.slice('sqlite:'.length) }, useNullAsDefault: true })
    : knex({ client: 'pg', connection: url, searchPath: schema ? [schema] : undefined });
}

const allNames = async () => (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
const history = async (db: Knex) => (await db('knex_migrations').select('name', 'batch', 'migration_time').orderBy('id')) as { name: string; batch: number; migration_time: unknown }[];
const historyNames = async (db: Knex) => (await history(db)).map((r) => r.name);
/** A history time as an instant: SQLite's are milliseconds (as Knex binds a Date there), PostgreSQL's a Date. */
const instant = (time: unknown) => new Date(time as number | string | Date).toISOString();

/** Applies the migrations up to `name`, or undoes those after it, one at a time. */
async function migrateTo(db: Knex, name: string): Promise<void> {
  const config = await migrationConfig(db);
  await db.migrate.to({ ...config, name });
  while ((await historyNames(db)).at(-1)! > name) await db.migrate.down(config);
}

const AT = '2026-03-05T08:30:00.000Z';
/** A claim row as the migrations' tests store one, with `fields` changed. */
const claim = (id: string, fields: Record<string, unknown> = {}) => ({
  id, claim_key: id, collection_id: 'default', household_did: `did:ixo:entity:${id}`, test_group: 'reference', status: 'pending', start_date: null, end_date: null, days: 3, total_kg: 3,
  daily_logs: '[1,1,1]', body: '{}', claim_cid: 'x', checks: '[]', reasons: '[]', credential: null, verifiable_credential: null, submitted_by: 'did:ixo:entity:s', created_at: AT, updated_at: AT,
  verified_at: null, ...fields,
});

interface Scratch {
  url: string;
  schema?: string;
  drop(): Promise<void>;
}

/** An empty SQLite file, or (url given) a PostgreSQL schema of its own. */
async function scratch(kind: 'sqlite' | 'postgres', fixture?: string): Promise<Scratch> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-migrations-'));
    const file = join(dir, 'hearth.sqlite');
    if (fixture) copyFileSync(fixture, file);
    return { url: `sqlite:${file}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `m_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  return {
    url: TEST_DATABASE_URL!,
    schema,
    async drop() {
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    },
  };
}

for (const kind of TEST_DATABASE_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  describe(`migrations on a fresh database [${kind}]`, function () {
    this.timeout(60_000);
    let s: Scratch;
    let db: Knex;
    beforeEach(async () => {
      s = await scratch(kind);
      db = open(s.url, s.schema);
    });
    afterEach(async () => {
      await db.destroy();
      await s.drop();
    });

    it('apply every area\'s migrations in one order, by number across the folders, named without their extension', async () => {
      const names = await allNames();
      expect(names).to.include.members(['001_platform_api_keys', '100_twins_schema', '200_ussd_sessions', '400_agent_user_preferences', '401_ussd_household_without_customer_id', '407_twins_feed_index_for_followers']);
      expect(names).to.deep.equal([...names].sort());
      expect(await migrateLatest(db)).to.deep.equal(names);
      expect(await historyNames(db)).to.deep.equal(names);
      expect(await migrateLatest(db)).to.deep.equal([]);
      expect(await historyNames(db)).to.deep.equal(names);
      expect(await db('kpt_collections').pluck('id')).to.have.members(['default', 'ussd']);
    });

    it('can all be undone, and applied again', async () => {
      const names = await allNames();
      await migrateLatest(db);
      await db.migrate.rollback(await migrationConfig(db), true);
      expect(await historyNames(db)).to.deep.equal([]);
      expect(await migrateLatest(db)).to.deep.equal(names);
    });

    it('408, 409: the seeded collections (default, ussd) are created when their migrations ran, not at the epoch; a database migrated before keeps its history times', async () => {
      const before = Date.now();
      await migrateLatest(db);
      const createdAt = async () => Object.fromEntries((await db<{ id: string; created_at: string }>('kpt_collections').select('id', 'created_at')).map((r) => [r.id, r.created_at]));
      const ranAt = async (name: string) => instant((await history(db)).find((h) => h.name === name)!.migration_time);
      const fresh = await createdAt();
      expect(fresh).to.deep.equal({ default: await ranAt('100_twins_schema'), ussd: await ranAt('203_ussd_default_collection') });
      for (const at of Object.values(fresh)) expect(Date.parse(at)).to.be.within(before - 1000, Date.now());
      // As a database migrated before them has them: the epoch, and the seeding migrations run a year ago.
      await migrateTo(db, '407_twins_feed_index_for_followers');
      expect(Object.values(await createdAt())).to.deep.equal([new Date(0).toISOString(), new Date(0).toISOString()]);
      const yearAgo = new Date(Date.now() - 365 * 86_400_000);
      await db('knex_migrations').update({ migration_time: yearAgo }).whereIn('name', ['100_twins_schema', '203_ussd_default_collection']);
      await migrateLatest(db);
      expect(await createdAt()).to.deep.equal({ default: yearAgo.toISOString(), ussd: yearAgo.toISOString() });
    });

    it('404: a collection keeps the principals already submitting into it as its submitters; default is open to all', async () => {
      await migrateTo(db, '403_ussd_earlier_texts');
      await db('kpt_collections').insert({ id: 'kisumu', name: 'Kisumu', description: null, selection_method: 'Random draw', created_by: 'did:ixo:entity:creator', created_at: AT });
      for (const [id, by] of [['c1', 'did:ixo:entity:creator'], ['c2', 'did:ixo:entity:gateway'], ['c3', 'did:ixo:entity:agent'], ['c4', 'did:ixo:entity:gateway']] as const) {
        await db('kpt_claims').insert(claim(id, { collection_id: 'kisumu', submitted_by: by }));
      }
      await migrateLatest(db);
      const rows: { id: string; submitters: string; open_to_all: unknown }[] = await db('kpt_collections').select('id', 'submitters', 'open_to_all').orderBy('id');
      expect(rows.map((r) => [r.id, JSON.parse(r.submitters) as string[], Boolean(r.open_to_all)])).to.deep.equal([
        ['default', [], true],
        ['kisumu', ['did:ixo:entity:agent', 'did:ixo:entity:gateway'], false],
        ['ussd', [], false],
      ]);
    });

    it('410, 411: a collection made before declares no selection design (its free text proves no draw); ussd becomes the census of the households registered over USSD, and back', async () => {
      await migrateTo(db, '409_ussd_collection_created_at');
      await db('kpt_collections').insert({ id: 'kisumu', name: 'Kisumu', description: null, selection_method: 'Random draw', created_by: 'did:ixo:entity:creator', created_at: AT });
      const selfEnrolment = (await db<{ id: string; selection_method: string }>('kpt_collections').where('id', 'ussd').first('selection_method'))!;
      expect(selfEnrolment.selection_method).to.match(/^Self-enrolment: .* Not a random sample;/);
      await migrateLatest(db);
      const designs = async () => (await db('kpt_collections').select('id', 'selection_method', 'selection_design').orderBy('id')) as { id: string; selection_method: string | null; selection_design: string | null }[];
      const after = await designs();
      expect(after.map((r) => [r.id, r.selection_design && (JSON.parse(r.selection_design) as unknown)])).to.deep.equal([
        ['default', null],
        ['kisumu', null],
        ['ussd', USSD_COLLECTION_DESIGN],
      ]);
      expect(after.map((r) => r.selection_method)).to.deep.equal([null, 'Random draw', USSD_COLLECTION_SELECTION_METHOD]);
      await migrateTo(db, '410_twins_selection_designs');
      expect((await designs()).find((r) => r.id === 'ussd')).to.deep.equal({ id: 'ussd', selection_method: selfEnrolment.selection_method, selection_design: null });
    });

    it('413: a collection made before sets no emission parameters (its report says so); down drops them', async () => {
      await migrateTo(db, '412_twins_issuing_keys_and_base_urls');
      await db('kpt_collections').insert({ id: 'kisumu', name: 'Kisumu', description: null, selection_method: 'Random draw', created_by: 'did:ixo:entity:creator', created_at: AT });
      await migrateLatest(db);
      expect(await db('kpt_collections').select('id', 'emission_parameters').orderBy('id')).to.deep.equal([
        { id: 'default', emission_parameters: null },
        { id: 'kisumu', emission_parameters: null },
        { id: 'ussd', emission_parameters: null },
      ]);
      await db('kpt_collections').update({ emission_parameters: '{"fNRB":0.3}' }).where('id', 'kisumu');
      await migrateTo(db, '412_twins_issuing_keys_and_base_urls');
      expect(await db.schema.hasColumn('kpt_collections', 'emission_parameters')).to.equal(false);
      expect(await db('kpt_collections').where('id', 'kisumu').first('name')).to.deep.equal({ name: 'Kisumu' });
    });

    it("405: moves every credential status row onto its claim, leaves the others standing, and its down migration gives the rows back", async () => {
      const statuses = [
        { status_list_index: 1, claim_id: 'revoked', revoked: true, suspended: false, updated_at: '2026-03-06T00:00:00.000Z' },
        { status_list_index: 2, claim_id: 'suspended', revoked: false, suspended: true, updated_at: '2026-03-07T00:00:00.000Z' },
        { status_list_index: 3, claim_id: 'reinstated', revoked: false, suspended: false, updated_at: '2026-03-08T00:00:00.000Z' },
      ];
      await migrateTo(db, '404_collection_submitters');
      for (const [id, index] of [['revoked', 1], ['suspended', 2], ['reinstated', 3], ['standing', 4], ['pending', null]] as const) {
        await db('kpt_claims').insert(claim(id, { status: index === null ? 'pending' : 'verified', status_list_index: index }));
      }
      await db('twin_credential_statuses').insert(statuses);

      await migrateLatest(db);
      const rows: { id: string; credential_revoked: unknown; credential_suspended: unknown; credential_status_changed_at: string | null }[] = await db('kpt_claims')
        .select('id', 'credential_revoked', 'credential_suspended', 'credential_status_changed_at')
        .orderBy('id');
      expect(rows.map((r) => [r.id, Boolean(r.credential_revoked), Boolean(r.credential_suspended), r.credential_status_changed_at])).to.deep.equal([
        ['pending', false, false, null],
        ['reinstated', false, false, '2026-03-08T00:00:00.000Z'],
        ['revoked', true, false, '2026-03-06T00:00:00.000Z'],
        ['standing', false, false, null],
        ['suspended', false, true, '2026-03-07T00:00:00.000Z'],
      ]);

      await migrateTo(db, '404_collection_submitters');
      const back: Record<string, unknown>[] = await db('twin_credential_statuses').select('*').orderBy('status_list_index');
      expect(back.map((r) => ({ ...r, revoked: Boolean(r.revoked), suspended: Boolean(r.suspended) }))).to.deep.equal(statuses);
      await migrateLatest(db);
    });

    it('412: the status lists indexes were handed out of become lists of their own, closed and without a key until the next start adopts them; its down migration gives the counter back past them', async () => {
      await migrateTo(db, '411_ussd_collection_full_population');
      await db('twin_status_index_counter').update({ next_index: 131_073 }).where('name', 'credentials');
      const { created_at: createdAt } = await db('twin_status_index_counter').first('created_at');
      await migrateLatest(db);
      expect(await db('twin_status_lists').select('list', 'issuer_did', 'base_url', 'position_key', 'next_position', 'created_at').orderBy('list')).to.deep.equal([0, 1].map((list) => (
        { list, issuer_did: null, base_url: null, position_key: null, next_position: 131_072, created_at: createdAt }
      )));
      await migrateTo(db, '411_ussd_collection_full_population');
      expect(Number((await db('twin_status_index_counter').first('next_index')).next_index)).to.equal(2 * 131_072);
      await migrateLatest(db);
      await db('twin_status_lists').delete();
    });
  });
}

/** The migrations written since Hearth ran on Kysely, which the fixtures made then have not had. */
const sinceKysely = (names: string[]) => names.filter((name) => name > '407_twins_feed_index_for_followers');

/**
 * Migrates a database made and filled by Hearth at 3cd5342, the last main on Kysely
 * (test/fixtures/kysely-era.sqlite, kysely-era.pg.sql: scripts/make-kysely-era-fixtures.sh), and
 * checks that its history is adopted with its times, exactly the migrations since are applied,
 * the Kysely history stays, and every row stays but for what those migrations are meant to change.
 */
async function expectKyselyEraUpgraded(db: Knex): Promise<void> {
  const kysely = (await db('kysely_migration').select('name', 'timestamp').orderBy('name')) as { name: string; timestamp: string }[];
  const names = await allNames();
  expect(kysely.map((r) => r.name)).to.deep.equal(names.filter((name) => !sinceKysely(names).includes(name)));
  const columns = await tableColumns(db);
  const before = await tableRows(db, columns);

  expect(await migrateLatest(db)).to.deep.equal(sinceKysely(names));
  const after = await history(db);
  expect(after.slice(0, kysely.length).map((r) => [r.name, instant(r.migration_time), r.batch])).to.deep.equal(kysely.map((r) => [r.name, r.timestamp, 1]));
  expect(after.slice(kysely.length).map((r) => [r.name, r.batch])).to.deep.equal(sinceKysely(names).map((name) => [name, 2]));
  expect(await db('kysely_migration').select('name', 'timestamp').orderBy('name')).to.deep.equal(kysely);

  // What 3cd5342 wrote, as its HTTP API, CLI and USSD demo wrote it.
  expect(Object.fromEntries(Object.entries(before).map(([table, rows]) => [table, rows.length]))).to.deep.equal({
    agent_user_preferences: 1, api_keys: 2, kpt_claims: 6, kpt_collections: 3, kpt_idempotency_keys: 3, twin_credential_status_events: 1, twin_entities: 5, twin_evidence_blobs: 6,
    twin_relationships: 1, twin_status_index_counter: 1, twin_validator_keys: 1, twins_idempotency_keys: 1, ussd_accounts: 2, ussd_claim_refs: 2, ussd_fuel_logs: 6, ussd_sessions: 6,
    ussd_swept_sessions: 0, ...(onPostgres(db) ? {} : { sqlite_sequence: 4 }),
  });
  expect(before.api_keys!.map((r) => r.name).sort()).to.deep.equal(['kysely-era', 'kysely-era-operator']);
  expect(before.twin_entities!.map((r) => r.type).sort()).to.deep.equal(['CleanCookingDevice', 'Household', 'Household', 'OracleEntity', 'Protocol']);
  expect(before.kpt_collections!.map((r) => r.id).sort()).to.deep.equal(['default', 'kisumu-2026', 'ussd']);
  const claims = [...before.kpt_claims!].sort((a, b) => Number(a.seq) - Number(b.seq));
  expect(claims.map((r) => [r.collection_id, r.test_group, r.status, r.status_list_index !== null, Boolean(r.credential_suspended)])).to.deep.equal([
    ['kisumu-2026', 'reference', 'verified', true, false],
    ['kisumu-2026', 'intervention', 'verified', true, true],
    ['default', 'reference', 'pending', true, false],
    ['default', 'reference', 'rejected', false, false],
    ['ussd', 'reference', 'verified', true, false],
    ['ussd', 'intervention', 'verified', true, false],
  ]);
  for (const c of claims.filter((r) => r.status === 'verified')) {
    expect(JSON.parse(c.credential as string)).to.have.property('type', 'KPTCredential');
    expect(JSON.parse(c.verifiable_credential as string)).to.have.nested.property('proof.cryptosuite', 'eddsa-jcs-2022');
  }
  expect(before.twin_credential_status_events!.map((r) => [r.action, r.reason])).to.deep.equal([['suspend', 'scale sent for calibration']]);
  expect(before.ussd_accounts!.map((r) => r.name).sort()).to.deep.equal(['Amina Otieno', 'Baraka Mwangi']);

  // Every row of every table stays with every column's value (credentials byte for byte; on
  // SQLite, the AUTOINCREMENT counters too), but what the migrations since change: 408 and 409
  // date the seeded collections when 100 and 203 ran, 411 gives ussd its selection method, and
  // 412 makes the status list the counter handed indexes out of, closed.
  const seededAt = (name: string) => kysely.find((r) => r.name === name)!.timestamp;
  const { twin_status_index_counter: counters, ...kept } = before;
  const expected = {
    ...kept,
    kpt_collections: kept.kpt_collections!.map((r) =>
      r.id === 'default' ? { ...r, created_at: seededAt('100_twins_schema') } : r.id === 'ussd' ? { ...r, created_at: seededAt('203_ussd_default_collection'), selection_method: USSD_COLLECTION_SELECTION_METHOD } : r,
    ),
  };
  const { twin_status_index_counter: _, ...keptColumns } = columns;
  const upgraded = await tableRows(db, keptColumns);
  // Table by table, so that a failure names its table (the whole would outgrow mocha's diff).
  for (const [table, rows] of Object.entries(expected)) expect(upgraded[table], table).to.deep.equal(rows);
  expect(await db.schema.hasTable('twin_status_index_counter')).to.equal(false);
  const [counter] = counters as { next_index: number | string; created_at: string }[];
  expect(Number(counter!.next_index)).to.be.within(1, 131_072);
  expect(await db('twin_status_lists').select('*')).to.deep.equal([{ list: 0, issuer_did: null, base_url: null, position_key: null, next_position: 131_072, created_at: counter!.created_at }]);
  expect(await db('kpt_collections').orderBy('id').select('id', 'selection_design', 'emission_parameters')).to.deep.equal([
    { id: 'default', selection_design: null, emission_parameters: null },
    { id: 'kisumu-2026', selection_design: null, emission_parameters: null },
    { id: 'ussd', selection_design: JSON.stringify(USSD_COLLECTION_DESIGN), emission_parameters: null },
  ]);

  expect(await migrateLatest(db)).to.deep.equal([]);
  expect(await historyNames(db)).to.deep.equal(names);
}

describe('migrations on a SQLite database made by an earlier Hearth', function () {
  this.timeout(60_000);
  let s: Scratch;
  let db: Knex;
  const openFixture = async (fixture: string) => {
    s = await scratch('sqlite', fixture);
    db = open(s.url);
  };
  afterEach(async () => {
    await db.destroy();
    await s.drop();
  });

  it('under Kysely (test/fixtures/kysely-era.sqlite, made by 3cd5342): its history is adopted, the migrations since are applied, every row of every table and the Kysely history stay', async () => {
    await openFixture('test/fixtures/kysely-era.sqlite');
    await expectKyselyEraUpgraded(db);
  });

  it('under Kysely: the history is adopted once, so a migration undone later is applied again', async () => {
    await openFixture('test/fixtures/kysely-era.sqlite');
    const names = await allNames();
    await migrateLatest(db);
    await db.migrate.down(await migrationConfig(db));
    expect(await historyNames(db)).to.deep.equal(names.slice(0, -1));
    expect(await migrateLatest(db)).to.deep.equal(names.slice(-1));
  });

  it('under Knex, before Kysely (test/fixtures/knex-era.sqlite): the migrations written since are applied, its rows stay', async () => {
    await openFixture('test/fixtures/knex-era.sqlite');
    const before = await history(db);
    const names = await allNames();
    expect(await migrateLatest(db)).to.deep.equal(names.filter((name) => name > '400_agent_user_preferences'));
    expect((await history(db)).slice(0, before.length)).to.deep.equal(before);
    expect(await historyNames(db)).to.deep.equal(names);
    expect(await db('api_keys').select('id', 'name')).to.deep.equal([{ id: 'k1', name: 'legacy' }]);
    expect(await db.schema.hasTable('knex_migrations_adopted')).to.equal(false);
  });

  it('under Knex, then Kysely (test/fixtures/knex-then-kysely-era.sqlite): Knex\'s rows stay, the names only Kysely recorded are added', async () => {
    await openFixture('test/fixtures/knex-then-kysely-era.sqlite');
    const before = await history(db);
    const kysely = await db('kysely_migration').select('name', 'timestamp').orderBy('name');
    const names = await allNames();
    expect(await migrateLatest(db)).to.deep.equal(sinceKysely(names));
    const after = await history(db);
    expect(after.slice(0, before.length)).to.deep.equal(before);
    expect(after.map((r) => r.name)).to.deep.equal(names);
    const times = new Map(kysely.map((r: { name: string; timestamp: string }) => [r.name, r.timestamp]));
    const adopted = after.slice(before.length, after.length - sinceKysely(names).length);
    expect(adopted.map((r) => [r.name, instant(r.migration_time), r.batch])).to.deep.equal(adopted.map((r) => [r.name, times.get(r.name), 1]));
    expect(await db('api_keys').select('id', 'name')).to.deep.equal([{ id: 'k1', name: 'legacy' }]);
  });

  it('a history naming 207_ussd_household_without_customer_id (401\'s first name) records it as 401: nothing runs again', async () => {
    await openFixture('test/fixtures/knex-then-kysely-era.sqlite');
    await db('kysely_migration').update({ name: '207_ussd_household_without_customer_id' }).where('name', '401_ussd_household_without_customer_id');
    expect(await migrateLatest(db)).to.deep.equal(sinceKysely(await allNames()));
    expect(await historyNames(db)).to.deep.equal(await allNames());
    expect(await db('kysely_migration').pluck('name')).to.include('207_ussd_household_without_customer_id');
  });

  it('have the schema a fresh database gets: the same columns, keys and indexes (SQLite spells some types and defaults its own way)', async () => {
    await openFixture('test/fixtures/kysely-era.sqlite');
    const fresh = await scratch('sqlite');
    const freshDb = open(fresh.url);
    try {
      await migrateLatest(freshDb);
      await migrateLatest(db);
      expect(await sqliteSchema(freshDb)).to.deep.equal(await sqliteSchema(db));
    } finally {
      await freshDb.destroy();
      await fresh.drop();
    }
  });
});

/** A SQLite database's tables as their behaviour sees them: column affinities, nullability, defaults' values, keys, unique and plain indexes. */
async function sqliteSchema(db: Knex): Promise<string[]> {
  const lines: string[] = [];
  const tables: string[] = await db('sqlite_master').where('type', 'table').whereRaw(notHistory('name')).whereNot('name', 'sqlite_sequence').orderBy('name').pluck('name');
  const affinity = (type: string) => (/int/i.test(type) ? 'integer' : /char|clob|text/i.test(type) ? 'text' : /real|floa|doub/i.test(type) ? 'real' : type.toLowerCase());
  const value = (dflt: string | null) => (dflt === null ? null : dflt === 'false' ? '0' : dflt.replace(/^'(.*)'$/, '$1'));
  for (const table of tables) {
    for (const c of await db.raw<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }[]>(`pragma table_info(??)`, [table])) {
      lines.push(`${table}.${c.name} ${affinity(c.type)} notnull=${c.notnull} pk=${c.pk} default=${value(c.dflt_value)}`);
    }
    for (const i of await db.raw<{ name: string; unique: number; origin: string; partial: number }[]>(`pragma index_list(??)`, [table])) {
      const columns = (await db.raw<{ name: string }[]>(`pragma index_info(??)`, [i.name])).map((c) => c.name);
      lines.push(`${table} ${i.origin === 'pk' ? 'primary key' : i.unique ? 'unique' : `index ${i.name}`} (${columns.join(', ')})${i.partial ? ' partial' : ''}`);
    }
    for (const f of await db.raw<{ from: string; table: string; to: string; on_delete: string }[]>(`pragma foreign_key_list(??)`, [table])) {
      lines.push(`${table}.${f.from} references ${f.table}.${f.to} on delete ${f.on_delete.toLowerCase()}`);
    }
  }
  return lines.sort();
}

/** SQL: the table named in `column` is none of the migration histories' (Knex's, Kysely's). */
const notHistory = (column: string) => `${column} not like 'knex\\_migrations%' escape '\\' and ${column} not like 'kysely\\_migration%' escape '\\'`;

/**
 * The columns of the database's tables, but the migration histories': on SQLite every table of the
 * file (sqlite_sequence too: the AUTOINCREMENT counters), on PostgreSQL those of the schema first
 * in the search path.
 */
async function tableColumns(db: Knex): Promise<Record<string, string[]>> {
  if (!onPostgres(db)) {
    const tables: string[] = await db('sqlite_master').where('type', 'table').whereRaw(notHistory('name')).orderBy('name').pluck('name');
    const columns: Record<string, string[]> = {};
    for (const table of tables) columns[table] = (await db.raw<{ name: string }[]>('pragma table_info(??)', [table])).map((c) => c.name);
    return columns;
  }
  const { rows } = await db.raw<{ rows: { table_name: string; column_name: string }[] }>(
    `select table_name, column_name from information_schema.columns where table_schema = current_schema() and ${notHistory('table_name')} order by table_name, ordinal_position`,
  );
  const columns: Record<string, string[]> = {};
  for (const r of rows) (columns[r.table_name] ??= []).push(r.column_name);
  return columns;
}

/** Each table's rows with the columns given, in one order (by their values); of sqlite_sequence, the counters of the tables but the histories'. */
async function tableRows(db: Knex, columns: Record<string, string[]>): Promise<Record<string, Record<string, unknown>[]>> {
  const rows: Record<string, Record<string, unknown>[]> = {};
  for (const [table, names] of Object.entries(columns)) {
    const read: Record<string, unknown>[] = await db(table).select(names).modify((q) => {
      if (table === 'sqlite_sequence') q.whereRaw(notHistory('name'));
    });
    rows[table] = read.map((r) => [JSON.stringify(r), r] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
  }
  return rows;
}

/**
 * A PostgreSQL schema's tables as its behaviour sees them, the migration histories' left out:
 * columns (type, length, nullability, default, compression), constraints and indexes, with the
 * schema's name taken out of their definitions.
 */
async function pgSchema(db: Knex): Promise<string[]> {
  const { schema } = (await db.raw<{ rows: { schema: string }[] }>('select current_schema() as schema')).rows[0]!;
  const unqualified = (text: string) => text.split(`${schema}.`).join('');
  const columns = await db.raw<{ rows: { table_name: string; column_name: string; data_type: string; udt_name: string; length: number | null; is_nullable: string; column_default: string | null; compression: string }[] }>(
    `select c.table_name, c.column_name, c.data_type, c.udt_name, c.character_maximum_length as length, c.is_nullable, c.column_default, a.attcompression as compression
      from information_schema.columns c join pg_attribute a on a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass and a.attname = c.column_name
      where c.table_schema = current_schema() and ${notHistory('c.table_name')}`,
  );
  const constraints = await db.raw<{ rows: { table_name: string; name: string; definition: string }[] }>(
    `select t.relname as table_name, k.conname as name, pg_get_constraintdef(k.oid) as definition from pg_constraint k join pg_class t on t.oid = k.conrelid
      where k.connamespace = current_schema()::regnamespace and ${notHistory('t.relname')}`,
  );
  const indexes = await db.raw<{ rows: { tablename: string; indexdef: string }[] }>(
    `select tablename, indexdef from pg_indexes where schemaname = current_schema() and ${notHistory('tablename')}`,
  );
  return [
    ...columns.rows.map((c) => `${c.table_name}.${c.column_name} ${c.data_type === 'USER-DEFINED' ? c.udt_name : c.data_type}${c.length === null ? '' : `(${c.length})`} nullable=${c.is_nullable} default=${c.column_default === null ? null : unqualified(c.column_default)} compression=${c.compression || '(default)'}`),
    ...constraints.rows.map((k) => `${k.table_name} constraint ${k.name} ${unqualified(k.definition)}`),
    ...indexes.rows.map((i) => `${i.tablename} ${unqualified(i.indexdef)}`),
  ].sort();
}

if (TEST_DATABASE_URL) {
  describe('migrations on PostgreSQL schemas', function () {
    this.timeout(60_000);
    const scratches: Scratch[] = [];
    const handles: Knex[] = [];
    const schemaWith = async () => {
      const s = await scratch('postgres');
      scratches.push(s);
      return s;
    };
    const handle = (s: Scratch) => {
      const db = open(s.url, s.schema);
      handles.push(db);
      return db;
    };
    afterEach(async () => {
      await Promise.all(handles.splice(0).map((db) => db.destroy()));
      for (const s of scratches.splice(0)) await s.drop();
    });

    /** As Hearth under Kysely left a schema: Kysely's history (its timestamps ISO text), no Knex history. */
    const asKyselyLeftIt = async (db: Knex) => {
      const rows = await history(db);
      await db.schema.createTable('kysely_migration', (t) => {
        t.string('name', 255).notNullable().primary();
        t.string('timestamp', 255).notNullable();
      });
      await db('kysely_migration').insert(rows.map((r, i) => ({ name: r.name, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() })));
      await db.schema.dropTable('knex_migrations').dropTable('knex_migrations_lock');
      return db('kysely_migration').select('name', 'timestamp').orderBy('name') as Promise<{ name: string; timestamp: string }[]>;
    };

    it("keep each schema's history in that schema: a second deployment in the same database migrates from scratch", async () => {
      const names = await allNames();
      expect(await migrateLatest(handle(await schemaWith()))).to.deep.equal(names);
      expect(await migrateLatest(handle(await schemaWith()))).to.deep.equal(names);
    });

    it('two instances starting at once on a fresh schema apply each migration once', async () => {
      const s = await schemaWith();
      const [a, b] = await Promise.all([migrateLatest(handle(s)), migrateLatest(handle(s))]);
      expect([...a, ...b].sort()).to.deep.equal(await allNames());
      expect(await historyNames(handle(s))).to.deep.equal(await allNames());
    });

    it('a schema migrated under Kysely: its history is adopted with its times, nothing is applied again, the Kysely history stays', async () => {
      const db = handle(await schemaWith());
      await migrateLatest(db);
      await db('api_keys').insert({ id: 'k1', name: 'kysely-era', key_hash: 'h'.repeat(64), prefix: 'hk_', principal_did: 'did:ixo:entity:abc', scopes: '[]', created_at: '2026-01-01T00:00:00.000Z' });
      const kysely = await asKyselyLeftIt(db);
      await db('kysely_migration').update({ name: '207_ussd_household_without_customer_id' }).where('name', '401_ussd_household_without_customer_id');
      const kyselyAsLeft = await db('kysely_migration').select('name', 'timestamp').orderBy('name');

      expect(await migrateLatest(db)).to.deep.equal([]);
      expect((await history(db)).map((r) => [r.name, instant(r.migration_time), r.batch])).to.deep.equal(kysely.map((r) => [r.name, r.timestamp, 1]));
      expect(await db('kysely_migration').select('name', 'timestamp').orderBy('name')).to.deep.equal(kyselyAsLeft);
      expect(await db('api_keys').pluck('name')).to.deep.equal(['kysely-era']);

      // Adopted once: a migration undone later is applied again.
      await db.migrate.down(await migrationConfig(db));
      expect(await migrateLatest(db)).to.deep.equal((await allNames()).slice(-1));
    });

    it("406: compresses the large text columns of claims with lz4 where the server has it; its down migration restores the default", async () => {
      const db = handle(await schemaWith());
      await migrateLatest(db);
      const { rows } = await db.raw<{ rows: { lz4: boolean }[] }>(`select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`);
      const methods = async () =>
        (await db.raw<{ rows: { attcompression: string }[] }>(`select attcompression from pg_attribute where attrelid = 'kpt_claims'::regclass
          and attname in ('body', 'checks', 'reasons', 'credential', 'verifiable_credential') order by attname`)).rows.map((r) => r.attcompression);
      // '' is the server's default_toast_compression (pglz unless it is set otherwise).
      expect(await methods()).to.deep.equal(Array(5).fill(rows[0]!.lz4 ? 'l' : ''));
      await migrateTo(db, '405_twins_credential_status_on_claims');
      expect(await methods()).to.deep.equal(Array(5).fill(''));
    });

    it("407: the followers' index of a collection's claims in commit order is partial (tx is not null); its down migration makes it whole again", async () => {
      const db = handle(await schemaWith());
      await migrateLatest(db);
      const definition = async () =>
        (await db.raw<{ rows: { indexdef: string }[] }>(`select indexdef from pg_indexes where schemaname = current_schema() and indexname = 'kpt_claims_collection_tx_seq_index'`)).rows[0]!.indexdef;
      expect(await definition()).to.match(/\(collection_id, tx, seq\) WHERE \(tx IS NOT NULL\)$/);
      await migrateTo(db, '406_twins_claim_lz4');
      expect(await definition()).to.match(/\(collection_id, tx, seq\)$/);
      await migrateLatest(db);
      expect(await definition()).to.match(/WHERE \(tx IS NOT NULL\)$/);
    });

    /**
     * A schema of its own holding test/fixtures/kysely-era.pg.sql: a database made by Hearth at
     * 3cd5342, the last main on Kysely (scripts/make-kysely-era-fixtures.sh). The fixture names
     * no schema: it is run with the scratch schema first in the search path.
     */
    const kyselyEraSchema = async () => {
      const s = await schemaWith();
      let dump = readFileSync('test/fixtures/kysely-era.pg.sql', 'utf8');
      const client = new pg.Client({ connectionString: s.url });
      await client.connect();
      try {
        // 406 set lz4 where the server has it; where it has not, the columns keep the default.
        const { rows } = await client.query<{ lz4: boolean }>(`select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`);
        if (!rows[0]!.lz4) dump = dump.replace(/^ALTER TABLE ONLY \w+ ALTER COLUMN \w+ SET COMPRESSION lz4;\n/gm, '');
        await client.query(`set search_path to ${s.schema}`);
        await client.query(dump);
      } finally {
        await client.end();
      }
      return handle(s);
    };

    it('a schema made by Hearth under Kysely (test/fixtures/kysely-era.pg.sql, made by 3cd5342): its history is adopted, the migrations since are applied, its rows and the Kysely history stay', async () => {
      await expectKyselyEraUpgraded(await kyselyEraSchema());
    });

    // A dump restored into another PostgreSQL server keeps the transaction ids of the one that
    // made it: the fixture's claims carry theirs, here moved 10^12 ahead of this server's.
    it('a schema made by Hearth under Kysely on a server whose transaction ids were ahead: once start-up settles the commit order, followers are given every claim, and a new one after them', async () => {
      const db = await kyselyEraSchema();
      await db.raw('update kpt_claims set tx = (tx::text::numeric + 1000000000000)::text::xid8');
      await migrateLatest(db);
      const stored: number[] = await db('kpt_claims').orderBy('seq').pluck('seq');
      const page = async (fromSeq?: number) => (await twinsReadPort(db).claims.page({ offset: 0, take: 100, reverse: false, ...(fromSeq ? { fromSeq } : {}) })).map((c) => c.seq);
      expect(await page(), 'before start-up settles the order').to.deep.equal([]);
      expect(await settleClaimAndEventOrder(db)).to.match(/^\d+$/);
      expect(await page()).to.deep.equal(stored);
      await db('kpt_claims').insert({ ...claim('after-the-move'), collection_id: 'kisumu-2026' });
      const [added] = await db('kpt_claims').where('id', 'after-the-move').pluck('seq');
      expect(await page(stored.at(-1)), 'from the last claim stored').to.deep.equal([stored.at(-1), added]);
    });

    it('a schema made by Hearth under Kysely has, migrated, the schema a fresh one gets: the same columns, types, defaults, compression, keys and indexes', async () => {
      const upgraded = await kyselyEraSchema();
      const fresh = handle(await schemaWith());
      await migrateLatest(upgraded);
      await migrateLatest(fresh);
      expect(await pgSchema(upgraded)).to.deep.equal(await pgSchema(fresh));
    });

    it('two instances starting at once on a schema migrated under Kysely adopt its history once', async () => {
      const s = await schemaWith();
      const db = handle(s);
      await migrateLatest(db);
      await asKyselyLeftIt(db);
      expect(await Promise.all([migrateLatest(handle(s)), migrateLatest(handle(s))])).to.deep.equal([[], []]);
      expect(await historyNames(db)).to.deep.equal(await allNames());
    });
  });
}
