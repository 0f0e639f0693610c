import type { Knex } from 'knex';

/** Whether a Knex handle (the pool, a transaction, a migration's) runs on PostgreSQL rather than SQLite. */
export const onPostgres = (knex: Knex): boolean => (knex.client as Knex.Client).dialect === 'postgresql';

/**
 * Drops columns with ALTER TABLE ... DROP COLUMN, on both databases. Knex drops a SQLite column by
 * copying the table into a new one, which fails inside a migration's transaction once another
 * table's rows reference it (foreign keys cannot be switched off there).
 */
export async function dropColumns(knex: Knex, table: string, ...columns: string[]): Promise<void> {
  for (const column of columns) await knex.raw('alter table ?? drop column ??', [table, column]);
}

/** When the migration `name` ran, as the history of the database records it (now, where it does not). */
export async function migrationRanAt(knex: Knex, name: string): Promise<string> {
  const row = (await knex('knex_migrations').first('migration_time').where({ name })) as { migration_time: unknown } | undefined;
  // SQLite keeps the milliseconds Knex bound for the Date, PostgreSQL a timestamp.
  const at = row && new Date(row.migration_time as string | number | Date);
  return (at && !Number.isNaN(at.getTime()) ? at : new Date()).toISOString();
}

/** The creation time 100 and 203 gave the collections they seed (the epoch), until 408 and 409. */
export const SEEDED_EPOCH = new Date(0).toISOString();
