import type { Knex } from 'knex';

// One row per telecom session. Any instance answers any hop: the state-machine snapshot, the
// last processed text (as a keyed digest and its length: the text holds the PINs typed) and
// its reply live here; `version` guards concurrent hops.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ussd_sessions', (t) => {
    t.string('id', 100).notNullable().primary();
    t.string('phone_number', 16).notNullable();
    t.string('service_code', 182).notNullable();
    t.text('snapshot').notNullable();
    t.string('state', 64).notNullable();
    t.boolean('is_authenticated').notNullable().defaultTo(false);
    t.string('last_text_digest', 64).notNullable();
    t.integer('last_text_length').notNullable();
    // Null while a hop is being processed (its text already recorded in last_text_digest).
    t.text('last_reply');
    t.string('status', 16).notNullable();
    t.integer('version').notNullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.string('expires_at', 32).notNullable();
    t.index(['status', 'expires_at'], 'ussd_sessions_status_expires_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ussd_sessions');
}
