import type { Knex } from 'knex';
import { onPostgres } from '../../platform/db/dialect.ts';

// PostgreSQL: claims and events record commit_order_tx() (431), not the bare transaction id, so
// their order survives a move of the database to another cluster.
const TABLES = ['kpt_claims', 'twin_events'];

export async function up(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  for (const table of TABLES) await knex.raw('alter table ?? alter column tx set default commit_order_tx()', [table]);
}

export async function down(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  for (const table of TABLES) await knex.raw('alter table ?? alter column tx set default pg_current_xact_id()', [table]);
}
