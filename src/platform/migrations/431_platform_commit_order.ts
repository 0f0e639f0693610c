import type { Knex } from 'knex';
import { onPostgres } from '../db/dialect.ts';

// PostgreSQL: what the `tx` of rows paged by inserting transaction (platform/db/sql.ts,
// byInsertingTransaction) adds to this cluster's transaction ids: 0 until the database is moved.
// A database dumped and restored into another cluster keeps the ids of the cluster that wrote
// it, which the new cluster's may be behind: readers would be given none of its rows, and new
// rows would sort before them. Start-up then raises the offset past them (settleCommitOrder).
export async function up(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.schema.createTable('commit_order', (t) => {
    t.smallint('id').primary();
    t.bigInteger('tx_offset').notNullable();
  });
  await knex('commit_order').insert({ id: 1, tx_offset: 0 });
}

export async function down(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.schema.dropTable('commit_order');
}
