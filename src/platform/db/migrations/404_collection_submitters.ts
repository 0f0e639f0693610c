import type { MigrationDb } from './index.ts';
import { DEFAULT_COLLECTION_ID } from './100_twins_schema.ts';

// Who may submit claims into a collection: its creator and its submitters (a JSON array of DIDs),
// or every key when it is open. A claim of one group verifies the other group's claims and counts
// in the campaign report, so a partner's campaign is not open to every other partner's keys.
// `default`, the collection of claims that name none, stays shared by every key as before.
// `ussd` takes the USSD gateway's principal at start-up (ussd/index.ts).
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .alterTable('kpt_collections')
    .addColumn('submitters', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .alterTable('kpt_collections')
    .addColumn('open_to_all', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.updateTable('kpt_collections').set({ open_to_all: true }).where('id', '=', DEFAULT_COLLECTION_ID).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('kpt_collections').dropColumn('open_to_all').execute();
  await db.schema.alterTable('kpt_collections').dropColumn('submitters').execute();
}
