import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// What the telecom gateway tells about a session: the mobile network it came from (every hop
// carries networkCode) and, once it is over, its end-of-session notification (status, duration,
// error), which says whether the household saw the last reply.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ussd_sessions', (t) => {
    t.string('network_code', 16);
    t.string('end_status', 32);
    t.integer('end_duration_ms');
    t.string('end_error', 200);
    t.string('ended_at', 32);
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropColumns(knex, 'ussd_sessions', 'network_code', 'end_status', 'end_duration_ms', 'end_error', 'ended_at');
}
