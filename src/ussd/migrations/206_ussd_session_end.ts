import type { MigrationDb } from './index.ts';

const COLUMNS = [
  ['network_code', 'varchar(16)'],
  ['end_status', 'varchar(32)'],
  ['end_duration_ms', 'integer'],
  ['end_error', 'varchar(200)'],
  ['ended_at', 'varchar(32)'],
] as const;

// What the telecom gateway tells about a session: the mobile network it came from (every hop
// carries networkCode) and, once it is over, its end-of-session notification (status, duration,
// error), which says whether the household saw the last reply. One column per statement: SQLite
// adds one at a time.
export async function up(db: MigrationDb): Promise<void> {
  for (const [column, type] of COLUMNS) await db.schema.alterTable('ussd_sessions').addColumn(column, type).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  for (const [column] of COLUMNS) await db.schema.alterTable('ussd_sessions').dropColumn(column).execute();
}
