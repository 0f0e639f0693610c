import type { SelectionDesign } from '../../generated/openapi/types.gen.ts';

/** The collection USSD claims go to when USSD_COLLECTION_ID is not set (made by migration 203). */
export const USSD_DEFAULT_COLLECTION_ID = 'ussd';

/**
 * The `ussd` collection's selection design (migration 411): a census of the households
 * registered on the service, which enrol themselves; true of every household it takes.
 */
export const USSD_COLLECTION_DESIGN: SelectionDesign = {
  type: 'full-population',
  frameSource: 'registered-households',
  frame: 'Every household registered on this Hearth service over USSD (households enrol themselves by dialling the service).',
  procedure:
    'Full population: every registered household is in the campaign and chooses its stove group itself. ' +
    'The population is the registered households, not a wider target population.',
};

export const USSD_COLLECTION_SELECTION_METHOD =
  'Full population of the households registered over USSD: every household that registers by dialling the service is in the campaign. ' +
  'Households enrol themselves, so the results describe the registered households only; a campaign over a wider population draws its households at random in a collection of its own.';
