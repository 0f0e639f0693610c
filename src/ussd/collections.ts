/** The collection USSD claims go to when USSD_COLLECTION_ID is not set (made by migration 203). */
export const USSD_DEFAULT_COLLECTION_ID = 'ussd';
