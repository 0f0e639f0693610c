import type { Knex } from 'knex';

// What the telecom gateway tells about a session: the mobile network it came from (every hop
// carries networkCode) and, once it is over, its end-of-session notification (status, duration,
// error), which says whether the household saw the last reply.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ussd_sessions', (t) => {
    t.string('network_code', 16).nullable();
    t.string('end_status', 32).nullable();
    t.integer('end_duration_ms').nullable();
    t.string('end_error', 200).nullable();
    t.string('ended_at', 32).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ussd_sessions', (t) => {
    t.dropColumn('network_code');
    t.dropColumn('end_status');
    t.dropColumn('end_duration_ms');
    t.dropColumn('end_error');
    t.dropColumn('ended_at');
  });
}
