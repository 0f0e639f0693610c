import { SYSTEM_DID } from './100_twins_schema.ts';
import type { MigrationDb } from './index.ts';

/** The collection USSD claims go to when USSD_COLLECTION_ID is not set. */
export const USSD_DEFAULT_COLLECTION_ID = 'ussd';

// Area A's `default` collection documents no selection method, so every claim in it is rejected
// on rule 5 (random selection). USSD claims carry no selection evidence of their own: out of the
// box they go to this collection, which documents how its households came in. A campaign that
// selects households at random documents that in a collection of its own (USSD_COLLECTION_ID).
export async function up(db: MigrationDb): Promise<void> {
  if (await db.selectFrom('kpt_collections').select('id').where('id', '=', USSD_DEFAULT_COLLECTION_ID).executeTakeFirst()) return;
  await db.insertInto('kpt_collections').values({
    id: USSD_DEFAULT_COLLECTION_ID,
    name: 'USSD households',
    description: 'Claims sent by households over USSD when no campaign collection is configured (USSD_COLLECTION_ID).',
    selection_method:
      'Self-enrolment: households join by dialling the USSD service and choose their stove group themselves. ' +
      'Not a random sample; for pilots and demonstrations. A campaign with random selection uses a collection of its own.',
    created_by: SYSTEM_DID,
    created_at: new Date(0).toISOString(),
  }).execute();
}

export async function down(db: MigrationDb): Promise<void> {
  // Only while no claim refers to it; otherwise the collection stays (the claims need it).
  const used = await db.selectFrom('kpt_claims').select('id').where('collection_id', '=', USSD_DEFAULT_COLLECTION_ID).executeTakeFirst();
  if (!used) await db.deleteFrom('kpt_collections').where('id', '=', USSD_DEFAULT_COLLECTION_ID).execute();
}
