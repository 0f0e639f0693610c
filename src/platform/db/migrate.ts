// Applies every area's migrations with Knex's migrator. Each area keeps its own in its folder
// (src/<area>/migrations/NNN_<area>_<what>.ts), and all of them run in one order, by number
// across the folders: a new file's number comes after every existing one, whatever its area.
// A migration's name leaves out the extension, so a migration built to dist/ (.js) is the same
// migration, and the names recorded by earlier Hearth versions still match.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import { onPostgres } from './dialect.ts';
import { lockUntilCommit } from './sql.ts';

/** src/ (dist/src/ when built): the area folders. */
const SOURCE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MIGRATION_FILE = /^(\d+)_.*\.[jt]s$/;

interface MigrationFile {
  folder: string;
  file: string;
}

const nameOf = (m: MigrationFile) => m.file.replace(/\.[jt]s$/, '');
/** By number, then name: `knex migrate:make` names files by timestamp, which come after NNN. */
const runOrder = (m: MigrationFile) => `${MIGRATION_FILE.exec(m.file)![1]!.padStart(20, '0')}_${nameOf(m)}`;

/** Every area's migrations, in their one run order. */
export const migrationSource: Knex.MigrationSource<MigrationFile> = {
  async getMigrations() {
    const files: MigrationFile[] = [];
    for (const area of readdirSync(SOURCE_ROOT, { withFileTypes: true })) {
      if (!area.isDirectory()) continue;
      const folder = join(SOURCE_ROOT, area.name, 'migrations');
      let names: string[];
      try {
        names = readdirSync(folder);
      } catch {
        continue;
      }
      for (const file of names) if (MIGRATION_FILE.test(file)) files.push({ folder, file });
    }
    files.sort((a, b) => (runOrder(a) < runOrder(b) ? -1 : 1));
    const twice = files.find((m, i) => i > 0 && nameOf(m) === nameOf(files[i - 1]!));
    if (twice) throw new Error(`Two migrations are named ${nameOf(twice)}: a name is the migration's identity in every database's history, so each must be unique across the areas.`);
    return files;
  },
  getMigrationName: nameOf,
  async getMigration(m) {
    return (await import(pathToFileURL(join(m.folder, m.file)).href)) as Knex.Migration;
  },
};

/**
 * Knex's migrator settings for a database. PostgreSQL: the history is kept in the schema the
 * migrations run in (the search path's first), so deployments in other schemas of the same
 * database neither see it nor are seen.
 */
export async function migrationConfig(db: Knex): Promise<Knex.MigratorConfig> {
  return { migrationSource, tableName: HISTORY, schemaName: await historySchema(db) };
}

/** Applies every migration not yet applied; the names of those it applied, in order. */
export async function migrateLatest(db: Knex): Promise<string[]> {
  const config = await migrationConfig(db);
  await prepareHistory(db, config.schemaName);
  const [, applied] = (await db.migrate.latest(config)) as [number, string[]];
  return applied;
}

/** What migrateLatest does before Knex's migrator runs, for Knex's CLI (knexfile.ts) to do first. */
export async function adoptEarlierHistory(db: Knex): Promise<void> {
  await prepareHistory(db, await historySchema(db));
}

const HISTORY = 'knex_migrations';
const HISTORY_LOCK = 'knex_migrations_lock';
/** Which earlier histories were copied into Knex's (one row each), so none is copied twice. */
const ADOPTED = 'knex_migrations_adopted';
const KYSELY_HISTORY = 'kysely_migration';

/**
 * Migrations renamed after some database had applied them under their first name, by that name:
 * their history is moved to the new name (Knex refuses a history naming a migration it does not
 * have). 207 sorted into the history of databases migrated before it; it runs as 401.
 */
const RENAMED_MIGRATIONS = new Map([['207_ussd_household_without_customer_id', '401_ussd_household_without_customer_id']]);

async function historySchema(db: Knex): Promise<string | undefined> {
  if (!onPostgres(db)) return undefined;
  const { rows } = await db.raw<{ rows: { schema: string }[] }>('select current_schema() as schema');
  return rows[0]!.schema;
}

/**
 * Makes Knex's history tables (as its migrator would) and brings earlier histories into them, in
 * one transaction that two instances starting at once take in turn: the second finds the tables
 * made and the history copied. Hearth under Kysely recorded its migrations in `kysely_migration`
 * (and, for databases made under Knex before it, copied `knex_migrations` there first): every
 * name it holds is recorded in `knex_migrations` with its time, so nothing is applied twice.
 * `kysely_migration` stays as it is. It is copied once: a migration undone later is applied
 * again, not taken from the old table as applied.
 */
async function prepareHistory(db: Knex, schema: string | undefined): Promise<void> {
  const table = (trx: Knex, name: string) => (schema ? trx(name).withSchema(schema) : trx(name));
  const schemaOf = (trx: Knex) => (schema ? trx.schema.withSchema(schema) : trx.schema);
  // SQLite: made before the transaction, whose first statement is then a write: it takes the one
  // write lock (waiting for another instance's) before reading anything, as BEGIN IMMEDIATE
  // would, which Knex's transactions do not offer.
  if (!onPostgres(db)) await createHistoryTables(db);
  await db.transaction(async (trx) => {
    if (onPostgres(trx)) {
      await lockUntilCommit(trx, 'adopt-migrations');
      await createHistoryTables(trx, schema);
    } else {
      await trx(HISTORY_LOCK).update({ is_locked: trx.ref('is_locked') });
    }
    if (!(await table(trx, HISTORY_LOCK).first())) await table(trx, HISTORY_LOCK).insert({ is_locked: 0 });
    for (const [from, to] of RENAMED_MIGRATIONS) await table(trx, HISTORY).update({ name: to }).where('name', from);

    if (!(await schemaOf(trx).hasTable(KYSELY_HISTORY))) return;
    await createTable(trx, schema, ADOPTED, (t) => {
      t.string('source', 255).notNullable().primary();
      t.string('adopted_at', 32).notNullable();
    });
    if (await table(trx, ADOPTED).where('source', KYSELY_HISTORY).first()) return;
    const kysely: { name: string; timestamp: string }[] = await table(trx, KYSELY_HISTORY).select('name', 'timestamp');
    const recorded = new Set((await table(trx, HISTORY).select('name')).map((r: { name: string }) => r.name));
    const missing = kysely
      .map(({ name, timestamp }) => ({ name: RENAMED_MIGRATIONS.get(name) ?? name, migration_time: new Date(timestamp) }))
      .filter(({ name }) => !recorded.has(name))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const row of missing) await table(trx, HISTORY).insert({ ...row, batch: 1 });
    await table(trx, ADOPTED).insert({ source: KYSELY_HISTORY, adopted_at: new Date().toISOString() });
  });
}

/** Knex's history table and its lock table, with the columns Knex's migrator gives them. */
async function createHistoryTables(db: Knex, schema?: string): Promise<void> {
  await createTable(db, schema, HISTORY, (t) => {
    t.increments();
    t.string('name');
    t.integer('batch');
    t.timestamp('migration_time');
  });
  await createTable(db, schema, HISTORY_LOCK, (t) => {
    t.increments('index').primary();
    t.integer('is_locked');
  });
}

/** Creates the table unless it exists, or another instance created it meanwhile. */
async function createTable(db: Knex, schema: string | undefined, name: string, build: (t: Knex.CreateTableBuilder) => void): Promise<void> {
  const builder = () => (schema ? db.schema.withSchema(schema) : db.schema);
  if (await builder().hasTable(name)) return;
  try {
    await builder().createTable(name, build);
  } catch (err) {
    if (!(await builder().hasTable(name))) throw err;
  }
}
