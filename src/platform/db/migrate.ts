// Applies the migrations (migrations/) with Kysely's Migrator, which records them in
// `kysely_migration` and lets one instance at a time migrate.
import { sql, type Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { dbClientOf, type Db } from './index.ts';
import { migrationProvider } from './migrations/index.ts';

/** Applies every migration not yet applied; the names of those it applied, in order. */
export async function migrateLatest(db: Db): Promise<string[]> {
  await adoptKnexHistory(db as unknown as Kysely<History>);
  const { error, results = [] } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

interface History {
  knex_migrations: { id: number; name: string; migration_time: unknown };
  kysely_migration: { name: string; timestamp: string };
}

/**
 * Databases made before Hearth moved from Knex to Kysely recorded their migrations in
 * `knex_migrations`, under the same names: they are copied to Kysely's table (created as its
 * Migrator would), so none is applied twice. The old table stays, untouched.
 */
async function adoptKnexHistory(db: Kysely<History>): Promise<void> {
  if (!(await tableExists(db, 'knex_migrations'))) return;
  await db.transaction().execute(async (trx) => {
    if (dbClientOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtextextended(current_schema() || ':adopt-knex-migrations', 0))`.execute(trx);
    await trx.schema
      .createTable('kysely_migration')
      .ifNotExists()
      .addColumn('name', 'varchar(255)', (c) => c.notNull().primaryKey())
      .addColumn('timestamp', 'varchar(255)', (c) => c.notNull())
      .execute();
    const applied = await trx.selectFrom('knex_migrations').select(['name', 'migration_time']).orderBy('id').execute();
    for (const { name, migration_time } of applied) {
      await trx
        .insertInto('kysely_migration')
        .values({ name, timestamp: new Date(migration_time as string | number | Date).toISOString() })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    }
  });
}

/** Whether the table is in this database (PostgreSQL: in the schemas of the search path). */
async function tableExists(db: Kysely<History>, name: string): Promise<boolean> {
  const query =
    dbClientOf(db) === 'postgres'
      ? sql<{ found: unknown }>`select to_regclass(${name}) as found`
      : sql<{ found: unknown }>`select name as found from sqlite_master where type = 'table' and name = ${name}`;
  const { rows } = await query.execute(db);
  return rows[0]?.found != null;
}
