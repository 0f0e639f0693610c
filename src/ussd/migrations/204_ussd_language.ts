import type { MigrationDb } from './index.ts';

// The language a household chose (a catalogue code: en, sw), kept on the account so every
// later session starts in it.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('ussd_accounts').addColumn('language', 'varchar(8)', (c) => c.notNull().defaultTo('en')).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('ussd_accounts').dropColumn('language').execute();
}
