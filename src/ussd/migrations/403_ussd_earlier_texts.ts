import type { MigrationDb } from './index.ts';

// A session's earlier texts, as short keyed digests (the texts hold PINs): the text of each of
// its hops before the last is a prefix of the last at a `*` (gateways send the whole text), so a
// gateway's late repeat of an earlier hop can be told from a new keypress and change nothing.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('ussd_sessions').addColumn('last_text_earlier', 'text', (c) => c.notNull().defaultTo('')).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('ussd_sessions').dropColumn('last_text_earlier').execute();
}
