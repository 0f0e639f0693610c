import type { Knex } from 'knex';

// The short reference a household reads out (8 characters) for each claim it sent, so a field
// agent or operator finds the claim behind it.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ussd_claim_refs', (t) => {
    t.string('ref', 8).notNullable().primary();
    t.string('claim_id', 100).notNullable();
    t.string('account_id', 32).notNullable();
    t.string('created_at', 32).notNullable();
    t.unique(['claim_id'], { indexName: 'ussd_claim_refs_claim_id_unique' });
    t.foreign('account_id', 'ussd_claim_refs_account_id_foreign').references('id').inTable('ussd_accounts').onDelete('cascade');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ussd_claim_refs');
}
