import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';
import { DEFAULT_COLLECTION_ID } from '../claims/collections.ts';

// Who may submit claims into a collection: its creator and its submitters (a JSON array of DIDs),
// or every key when it is open. A claim of one group verifies the other group's claims and counts
// in the campaign report, so a partner's campaign is not open to every other partner's keys.
// `default`, the collection of claims that name none, stays shared by every key as before.
// `ussd` takes the USSD gateway's principal at start-up (ussd/index.ts).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_collections', (t) => {
    t.text('submitters').notNullable().defaultTo('[]');
    t.boolean('open_to_all').notNullable().defaultTo(false);
  });
  await knex('kpt_collections').update({ open_to_all: true }).where('id', DEFAULT_COLLECTION_ID);
  // Who already submits into a collection keeps doing so (a campaign fed by a field partner or
  // the USSD gateway): its creator may change that later (PATCH /v1/collections/{id}).
  const submitting = (await knex
    .from('kpt_claims as k')
    .innerJoin('kpt_collections as c', 'c.id', 'k.collection_id')
    .distinct('k.collection_id', 'k.submitted_by')
    .where('c.open_to_all', false)
    .whereRaw('k.submitted_by <> c.created_by')
    .orderBy(['k.collection_id', 'k.submitted_by'])) as { collection_id: string; submitted_by: string }[];
  const submitters = new Map<string, string[]>();
  for (const r of submitting) submitters.set(r.collection_id, [...(submitters.get(r.collection_id) ?? []), r.submitted_by]);
  for (const [id, dids] of submitters) await knex('kpt_collections').update({ submitters: JSON.stringify(dids) }).where('id', id);
}

export async function down(knex: Knex): Promise<void> {
  await dropColumns(knex, 'kpt_collections', 'open_to_all', 'submitters');
}
