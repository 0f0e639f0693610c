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
