import type { Knex } from 'knex';
import { onPostgres } from '../../platform/db/dialect.ts';

// PostgreSQL: the followers' index of a collection's claims in commit order (104) serves only
// statements that say something of `tx`, as every follower's page does (its horizon, `tx < ...`,
// implies `tx is not null`). A claim's partner read asks only for a collection's group: it must
// read the group's index, even in a plan made once for every value while the table was empty
// (as prepared statements were then). There the two indexes cost the same, and with the commit-order one a
// group without pending claims was read whole, claim by claim, on every submission.
export async function up(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.raw('drop index kpt_claims_collection_tx_seq_index');
  await knex.raw('create index kpt_claims_collection_tx_seq_index on kpt_claims (collection_id, tx, seq) where tx is not null');
}

export async function down(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await knex.raw('drop index kpt_claims_collection_tx_seq_index');
  await knex.raw('create index kpt_claims_collection_tx_seq_index on kpt_claims (collection_id, tx, seq)');
}
