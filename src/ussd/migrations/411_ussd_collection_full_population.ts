import type { Knex } from 'knex';
import { SYSTEM_DID } from '../../twins/claims/collections.ts';
import { USSD_COLLECTION_DESIGN, USSD_COLLECTION_SELECTION_METHOD, USSD_DEFAULT_COLLECTION_ID } from '../collections.ts';

// The `ussd` collection declared "Not a random sample" yet met KPT rule 5 through its free text.
// Its truthful design: the full population of the households registered on the service over
// USSD (every one of them is in the campaign), stated as such in its reports and credentials.
const SELF_ENROLMENT =
  'Self-enrolment: households join by dialling the USSD service and choose their stove group themselves. ' +
  'Not a random sample; for pilots and demonstrations. A campaign with random selection uses a collection of its own.';

export async function up(knex: Knex): Promise<void> {
  await knex('kpt_collections')
    .update({ selection_design: JSON.stringify(USSD_COLLECTION_DESIGN), selection_method: USSD_COLLECTION_SELECTION_METHOD })
    .where({ id: USSD_DEFAULT_COLLECTION_ID, created_by: SYSTEM_DID })
    .whereNull('selection_design');
}

export async function down(knex: Knex): Promise<void> {
  await knex('kpt_collections')
    .update({ selection_design: null, selection_method: SELF_ENROLMENT })
    .where({ id: USSD_DEFAULT_COLLECTION_ID, created_by: SYSTEM_DID });
}
