import type { Knex } from 'knex';

// The ids of sessions the sweep removed, kept a day longer: a gateway's late retry of such a
// session's hop would otherwise look like a dial shortcut and replay every input of the session
// (its PIN, its readings). Only what the expired reply needs is kept.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ussd_swept_sessions', (t) => {
    t.string('id', 100).notNullable().primary();
    t.string('service_code', 182).notNullable();
    t.string('language', 8).notNullable();
    t.string('swept_at', 32).notNullable();
    t.index(['swept_at'], 'ussd_swept_sessions_swept_at_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ussd_swept_sessions');
}
