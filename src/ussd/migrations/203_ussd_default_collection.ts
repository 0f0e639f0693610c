import type { Knex } from 'knex';
import { SYSTEM_DID } from '../../twins/claims/collections.ts';
import { USSD_DEFAULT_COLLECTION_ID } from '../collections.ts';

// Area A's `default` collection documents no selection method, so every claim in it is rejected
// on rule 5 (random selection). USSD claims carry no selection evidence of their own: out of the
// box they go to this collection, which documents how its households came in. A campaign that
// selects households at random documents that in a collection of its own (USSD_COLLECTION_ID).
export async function up(knex: Knex): Promise<void> {
  if (await knex('kpt_collections').select('id').where('id', USSD_DEFAULT_COLLECTION_ID).first()) return;
  await knex('kpt_collections').insert({
    id: USSD_DEFAULT_COLLECTION_ID,
    name: 'USSD households',
    description: 'Claims sent by households over USSD when no campaign collection is configured (USSD_COLLECTION_ID).',
    selection_method:
      'Self-enrolment: households join by dialling the USSD service and choose their stove group themselves. ' +
      'Not a random sample; for pilots and demonstrations. A campaign with random selection uses a collection of its own.',
    created_by: SYSTEM_DID,
    created_at: new Date(0).toISOString(),
  });
}

export async function down(knex: Knex): Promise<void> {
  // Only while no claim refers to it; otherwise the collection stays (the claims need it).
  const used = await knex('kpt_claims').select('id').where('collection_id', USSD_DEFAULT_COLLECTION_ID).first();
  if (!used) await knex('kpt_collections').where('id', USSD_DEFAULT_COLLECTION_ID).del();
}
