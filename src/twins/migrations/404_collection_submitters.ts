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
  // Who already submits into a collection keeps doing so (a campaign fed by a field partner or
  // the USSD gateway): its creator may change that later (PATCH /v1/collections/{id}).
  const submitting = await db
    .selectFrom('kpt_claims as k')
    .innerJoin('kpt_collections as c', 'c.id', 'k.collection_id')
    .select(['k.collection_id', 'k.submitted_by'])
    .distinct()
    .where('c.open_to_all', '=', false)
    .whereRef('k.submitted_by', '<>', 'c.created_by')
    .orderBy('k.collection_id')
    .orderBy('k.submitted_by')
    .execute();
  const submitters = new Map<string, string[]>();
  for (const r of submitting) submitters.set(String(r.collection_id), [...(submitters.get(String(r.collection_id)) ?? []), String(r.submitted_by)]);
  for (const [id, dids] of submitters) await db.updateTable('kpt_collections').set({ submitters: JSON.stringify(dids) }).where('id', '=', id).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('kpt_collections').dropColumn('open_to_all').execute();
  await db.schema.alterTable('kpt_collections').dropColumn('submitters').execute();
}
