import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// What request an Idempotency-Key was first sent with (SHA-256 of the canonical claim), so a
// retry is recognised by its whole body: the claim's measurement key alone misses other fields,
// and changes when a rejected claim is corrected. Keys bound before this migration have none.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_idempotency_keys', (t) => {
    t.string('request_hash', 64);
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropColumns(knex, 'kpt_idempotency_keys', 'request_hash');
}
