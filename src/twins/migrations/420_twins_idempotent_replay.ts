import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// What the first request with an Idempotency-Key was answered (HTTP status and JSON body, byte
// for byte), so a retry gets that answer again rather than the resource as it is now. Keys bound
// before this migration have neither: a retry with one answers 201 with the current resource.
export async function up(knex: Knex): Promise<void> {
  for (const table of ['twins_idempotency_keys', 'kpt_idempotency_keys']) {
    await knex.schema.alterTable(table, (t) => {
      t.integer('response_status');
      t.text('response_body');
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['twins_idempotency_keys', 'kpt_idempotency_keys']) await dropColumns(knex, table, 'response_status', 'response_body');
}
