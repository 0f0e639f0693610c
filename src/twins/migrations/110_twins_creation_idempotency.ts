import type { Knex } from 'knex';

// Idempotency-Keys of the creating POSTs other than claims (entities, collections): scoped to
// the caller and the operation, naming the resource the first request created and the hash of
// that request's body, so a retry is answered with it and another body with the key refused.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('twins_idempotency_keys', (t) => {
    t.string('principal_did', 512).notNullable();
    t.string('operation', 64).notNullable();
    t.string('idempotency_key', 200).notNullable();
    t.string('request_hash', 64).notNullable();
    t.string('resource_id', 512).notNullable();
    t.string('created_at', 32).notNullable();
    t.primary(['principal_did', 'operation', 'idempotency_key'], 'twins_idempotency_keys_pkey');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('twins_idempotency_keys');
}
