import { notNull, type MigrationDb } from './index.ts';

// One row per telecom session. Any instance answers any hop: the state-machine snapshot, the
// last processed text (as a keyed digest and its length: the text holds the PINs typed) and
// its reply live here; `version` guards concurrent hops.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('ussd_sessions')
    .addColumn('id', 'varchar(100)', (c) => c.notNull().primaryKey())
    .addColumn('phone_number', 'varchar(16)', notNull)
    .addColumn('service_code', 'varchar(182)', notNull)
    .addColumn('snapshot', 'text', notNull)
    .addColumn('state', 'varchar(64)', notNull)
    .addColumn('is_authenticated', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('last_text_digest', 'varchar(64)', notNull)
    .addColumn('last_text_length', 'integer', notNull)
    // Null while a hop is being processed (its text already recorded in last_text_digest).
    .addColumn('last_reply', 'text')
    .addColumn('status', 'varchar(16)', notNull)
    .addColumn('version', 'integer', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addColumn('updated_at', 'varchar(32)', notNull)
    .addColumn('expires_at', 'varchar(32)', notNull)
    .execute();
  await db.schema.createIndex('ussd_sessions_status_expires_idx').on('ussd_sessions').columns(['status', 'expires_at']).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('ussd_sessions').execute();
}
