import type { Knex } from 'knex';

// Bitstring Status List v1.0 for KPT credentials (src/twins/credential-status.ts): each claim
// signed with a credential gets a status index; the state of an index is a row only once it was
// revoked or suspended, and every change is an audit row naming who made it and why.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.integer('status_list_index').nullable().unique();
  });
  // Instances reserve blocks of indexes here, so no two credentials share one.
  await knex.schema.createTable('twin_status_index_counter', (t) => {
    t.string('name', 32).primary();
    t.bigInteger('next_index').notNullable();
    t.string('created_at', 32).notNullable();
  });
  await knex('twin_status_index_counter').insert({ name: 'credentials', next_index: 0, created_at: new Date().toISOString() });
  await knex.schema.createTable('twin_credential_statuses', (t) => {
    t.integer('status_list_index').primary();
    t.string('claim_id', 64).notNullable().unique().references('id').inTable('kpt_claims');
    t.boolean('revoked').notNullable().defaultTo(false);
    t.boolean('suspended').notNullable().defaultTo(false);
    t.string('updated_at', 32).notNullable();
  });
  await knex.schema.createTable('twin_credential_status_events', (t) => {
    t.increments('id').primary();
    t.string('claim_id', 64).notNullable().index();
    t.integer('status_list_index').notNullable();
    t.string('action', 16).notNullable();
    t.text('reason').notNullable();
    t.string('actor_did', 512).notNullable();
    t.string('api_key_id', 64).nullable();
    t.string('created_at', 32).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('twin_credential_status_events');
  await knex.schema.dropTable('twin_credential_statuses');
  await knex.schema.dropTable('twin_status_index_counter');
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.dropUnique(['status_list_index']);
    t.dropColumn('status_list_index');
  });
}
