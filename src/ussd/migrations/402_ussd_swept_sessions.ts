import { notNull, type MigrationDb } from './index.ts';

// The ids of sessions the sweep removed, kept a day longer: a gateway's late retry of such a
// session's hop would otherwise look like a dial shortcut and replay every input of the session
// (its PIN, its readings). Only what the expired reply needs is kept.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('ussd_swept_sessions')
    .addColumn('id', 'varchar(100)', (c) => c.notNull().primaryKey())
    .addColumn('service_code', 'varchar(182)', notNull)
    .addColumn('language', 'varchar(8)', notNull)
    .addColumn('swept_at', 'varchar(32)', notNull)
    .execute();
  await db.schema.createIndex('ussd_swept_sessions_swept_at_idx').on('ussd_swept_sessions').column('swept_at').execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('ussd_swept_sessions').execute();
}
