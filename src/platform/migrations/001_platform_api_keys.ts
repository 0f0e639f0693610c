import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('api_keys', (t) => {
    t.string('id', 32).notNullable().primary();
    t.string('name', 200).notNullable();
    // SHA-256 of the whole key: keys are 256-bit random, so a fast hash is enough and the
    // plain key is never stored.
    t.string('key_hash', 64).notNullable();
    t.string('prefix', 16).notNullable();
    t.string('principal_did', 512).notNullable();
    t.text('scopes').notNullable();
    t.string('created_at', 32).notNullable();
    t.string('revoked_at', 32);
    t.unique(['key_hash'], { indexName: 'api_keys_key_hash_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('api_keys');
}
