import type { Knex } from 'knex';

// USSD customers. The PIN is stored only AES-256-GCM encrypted; failed attempts and the lock
// live here (not in the session) so three wrong PINs lock the account across sessions.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ussd_accounts', (t) => {
    t.string('id', 32).notNullable().primary();
    t.string('customer_id', 16).notNullable();
    t.string('phone_number', 16).notNullable();
    t.string('name', 60).notNullable();
    t.string('village', 60);
    t.string('test_group', 16).notNullable();
    // Null only while the account is being created: the row comes first, so a failure creating
    // the household twin leaves no orphan household (the row is deleted instead).
    t.string('household_did', 512);
    t.text('pin_encrypted').notNullable();
    t.integer('failed_pin_attempts').notNullable().defaultTo(0);
    t.string('locked_at', 32);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.unique(['customer_id'], { indexName: 'ussd_accounts_customer_id_unique' });
    t.unique(['phone_number'], { indexName: 'ussd_accounts_phone_number_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ussd_accounts');
}
