// Applies the migrations (migrations/) with Kysely's Migrator, which records them in
// `kysely_migration` and lets one instance at a time migrate.
import { Migrator, sql, type Kysely } from 'kysely';
import { dbClientOf, type Db } from './index.ts';
import { inTransaction, lockUntilCommit } from './sql.ts';
import { migrationProvider } from './migrations/index.ts';

/** Applies every migration not yet applied; the names of those it applied, in order. */
export async function migrateLatest(db: Db): Promise<string[]> {
  const migrationTableSchema = await currentSchema(db);
  await adoptKnexHistory(db as unknown as Kysely<History>, migrationTableSchema);
  await adoptRenamedMigrations(db as unknown as Kysely<History>, migrationTableSchema);
  const { error, results = [] } = await new Migrator({ db, provider: migrationProvider, migrationTableSchema }).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error('The migrations failed.', { cause: error });
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

interface History {
  knex_migrations: { id: number; name: string; migration_time: unknown };
  kysely_migration: { name: string; timestamp: string };
}

/**
 * Databases made before Hearth moved from Knex to Kysely recorded their migrations in
 * `knex_migrations`, under the same names: they are copied to Kysely's table (created as its
 * Migrator would), so none is applied twice. The old table stays, untouched. It is copied once,
 * with the table that holds the copy: from then on Kysely's history is the only one, and a
 * migration undone later is applied again, not taken from the old table as applied.
 */
async function adoptKnexHistory(db: Kysely<History>, schema: string | undefined): Promise<void> {
  if (!(await tableExists(db, 'knex_migrations'))) return;
  await inTransaction(db as unknown as Db, async (sql) => {
    const trx = sql as unknown as Kysely<History>;
    const history = schema ? trx.withSchema(schema) : trx;
    // Two instances starting at once: the second finds the first's copy.
    await lockUntilCommit(sql, 'adopt-knex-migrations');
    if (await tableExists(trx, historyTable(schema))) return;
    await history.schema
      .createTable('kysely_migration')
      .addColumn('name', 'varchar(255)', (c) => c.notNull().primaryKey())
      .addColumn('timestamp', 'varchar(255)', (c) => c.notNull())
      .execute();
    const applied = await trx.selectFrom('knex_migrations').select(['name', 'migration_time']).orderBy('id').execute();
    for (const { name, migration_time } of applied) {
      await history
        .insertInto('kysely_migration')
        .values({ name, timestamp: new Date(migration_time as string | number | Date).toISOString() })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    }
  });
}

/**
 * Migrations renamed after some database had applied them under their first name, by that name:
 * their history is moved to the new name (the Migrator refuses a history naming a migration it
 * does not have). 207 sorted into the history of databases migrated before it; it runs as 401.
 */
const RENAMED_MIGRATIONS = new Map([['207_ussd_household_without_customer_id', '401_ussd_household_without_customer_id']]);

async function adoptRenamedMigrations(db: Kysely<History>, schema: string | undefined): Promise<void> {
  if (!(await tableExists(db, historyTable(schema)))) return;
  const history = schema ? db.withSchema(schema) : db;
  for (const [from, to] of RENAMED_MIGRATIONS) {
    await history.updateTable('kysely_migration').set({ name: to }).where('name', '=', from).execute();
  }
}

/** The name Kysely's history table is found by, in `schema` if given. */
const historyTable = (schema: string | undefined) => (schema ? `${schema}.kysely_migration` : 'kysely_migration');

/** Whether the table is in this database (PostgreSQL: in the schemas of the search path). */
async function tableExists(db: Kysely<History>, name: string): Promise<boolean> {
  const query =
    dbClientOf(db) === 'postgres'
      ? sql<{ found: unknown }>`select to_regclass(${name}) as found`
      : sql<{ found: unknown }>`select name as found from sqlite_master where type = 'table' and name = ${name}`;
  const { rows } = await query.execute(db);
  return rows[0]?.found != null;
}

/**
 * PostgreSQL: the schema the migrations run in, where their history is kept too. Kysely's
 * Migrator would otherwise take another schema's history table, in the same database, for ours.
 */
async function currentSchema(db: Db): Promise<string | undefined> {
  if (dbClientOf(db) !== 'postgres') return undefined;
  return (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]!.schema;
}
