import type { Knex } from 'knex';
import { onPostgres } from '../db/dialect.ts';

// PostgreSQL: the `tx` of a row paged by inserting transaction (platform/db/sql.ts,
// byInsertingTransaction) is commit_order_tx(): this cluster's transaction id plus an offset,
// 0 until the database is moved. A database dumped and restored into another cluster keeps the
// ids of the cluster that wrote it, which the new cluster's may be behind: readers would be given
// none of its rows, and new rows would sort before them. Start-up then raises the offset past
// them (settleCommitOrder), so every row stored is older than any to come. The function keeps
// the search path it was made under: each deployment's schema has its own offset.
export async function up(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.schema.createTable('commit_order', (t) => {
    t.smallint('id').primary();
    t.bigInteger('tx_offset').notNullable();
  });
  await knex('commit_order').insert({ id: 1, tx_offset: 0 });
  await knex.raw(`create function commit_order_tx() returns xid8 language sql volatile set search_path from current
    as $$ select (pg_current_xact_id()::text::numeric + tx_offset)::text::xid8 from commit_order where id = 1 $$`);
}

export async function down(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.raw('drop function commit_order_tx()');
  await knex.schema.dropTable('commit_order');
}
