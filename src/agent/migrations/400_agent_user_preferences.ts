import { notNull, type MigrationDb } from './index.ts';

export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('agent_user_preferences')
    .addColumn('user_did', 'varchar(512)', notNull)
    .addColumn('room_id', 'varchar(255)', notNull)
    .addColumn('agent_name', 'varchar(80)')
    .addColumn('user_name', 'varchar(80)')
    .addColumn('language', 'varchar(35)')
    .addColumn('tone', 'varchar(120)')
    .addColumn('length', 'varchar(16)')
    .addColumn('format', 'varchar(16)')
    .addColumn('formality', 'varchar(16)')
    .addColumn('emoji', 'varchar(16)')
    .addColumn('custom_instructions', 'text')
    .addColumn('updated_at', 'varchar(32)', notNull)
    // One record per user and room; the upsert of set_user_preferences targets this key.
    .addPrimaryKeyConstraint('agent_user_preferences_pkey', ['user_did', 'room_id'])
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('agent_user_preferences').execute();
}
