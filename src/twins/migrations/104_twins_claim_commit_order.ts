import type { Knex } from 'knex';
import { onPostgres } from '../../platform/db/dialect.ts';

// PostgreSQL: each claim row records the transaction that inserted it, so followers can page in
// an order no transaction still in flight can insert before (twins/claims/claim-order.repository.ts, commitOrder);
// claim inserts then wait for no one. Rows stored before this all get this migration's
// transaction, so they keep their `seq` order. SQLite commits one writer at a time: `seq` is
// commit order there already.
export async function up(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.raw('alter table kpt_claims add column tx xid8 not null default pg_current_xact_id()');
  await knex.raw('create index kpt_claims_tx_seq_index on kpt_claims (tx, seq)');
  await knex.raw('create index kpt_claims_collection_tx_seq_index on kpt_claims (collection_id, tx, seq)');
}

export async function down(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.raw('alter table kpt_claims drop column tx');
}
