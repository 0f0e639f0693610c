import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// Bitstring Status List v1.0 for KPT credentials (src/twins/credentials/credential-status.ts): each claim
// signed with a credential gets a status index; the state of an index is a row only once it was
// revoked or suspended, and every change is an audit row naming who made it and why.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.integer('status_list_index');
    t.unique(['status_list_index'], { indexName: 'kpt_claims_status_list_index_unique', useConstraint: false });
  });
  // Instances reserve blocks of indexes here, so no two credentials share one.
  await knex.schema.createTable('twin_status_index_counter', (t) => {
    t.string('name', 32).notNullable().primary();
    t.bigInteger('next_index').notNullable();
    t.string('created_at', 32).notNullable();
  });
  await knex('twin_status_index_counter').insert({ name: 'credentials', next_index: 0, created_at: new Date().toISOString() });
  await createStatusTable(knex);
  await knex.schema.createTable('twin_credential_status_events', (t) => {
    t.increments('id');
    t.string('claim_id', 64).notNullable();
    t.integer('status_list_index').notNullable();
    t.string('action', 16).notNullable();
    t.text('reason').notNullable();
    t.string('actor_did', 512).notNullable();
    t.string('api_key_id', 64);
    t.string('created_at', 32).notNullable();
    t.index(['claim_id'], 'twin_credential_status_events_claim_id_index');
  });
}

/** The state of each index whose status changed (until migration 405 moved it onto the claims, and after its down migration). */
export async function createStatusTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('twin_credential_statuses', (t) => {
    t.integer('status_list_index').notNullable().primary();
    t.string('claim_id', 64).notNullable();
    t.boolean('revoked').notNullable().defaultTo(false);
    t.boolean('suspended').notNullable().defaultTo(false);
    t.string('updated_at', 32).notNullable();
    t.unique(['claim_id'], { indexName: 'twin_credential_statuses_claim_id_unique' });
    t.foreign('claim_id', 'twin_credential_statuses_claim_id_foreign').references('id').inTable('kpt_claims');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['twin_credential_status_events', 'twin_credential_statuses', 'twin_status_index_counter']) await knex.schema.dropTable(table);
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.dropIndex([], 'kpt_claims_status_list_index_unique');
  });
  await dropColumns(knex, 'kpt_claims', 'status_list_index');
}
