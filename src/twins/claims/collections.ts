// The collections Hearth makes itself (migrations 100 and 203) and who made them.

/** The collection of claims that name none. */
export const DEFAULT_COLLECTION_ID = 'default';

/** The creator of the collections the migrations make (`default`, `ussd`): no partner's principal. */
export const SYSTEM_DID = 'did:ixo:entity:00000000000000000000000000000000';
