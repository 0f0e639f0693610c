import type { Knex } from 'knex';

// One fuel reading per account and day (a second entry the same day replaces the first).
// `claim_id` marks the readings a KPT claim used, so the next claim takes only new days.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ussd_fuel_logs', (t) => {
    t.string('id', 32).notNullable().primary();
    t.string('account_id', 32).notNullable();
    t.string('log_date', 10).notNullable();
    t.double('kg').notNullable();
    t.string('claim_id', 100);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.foreign('account_id', 'ussd_fuel_logs_account_id_foreign').references('id').inTable('ussd_accounts').onDelete('cascade');
    t.unique(['account_id', 'log_date'], { indexName: 'ussd_fuel_logs_account_day_uq' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ussd_fuel_logs');
}
