// The collections Hearth makes itself (migrations 100 and 203) and who made them, and who may
// submit claims into a collection.
import type { Collection } from '../../../generated/openapi/types.gen.ts';

/** The collection of claims that name none. */
export const DEFAULT_COLLECTION_ID = 'default';

/** The creator of the collections the migrations make (`default`, `ussd`): no partner's principal. */
export const SYSTEM_DID = 'did:ixo:entity:00000000000000000000000000000000';

/** Whether `principalDid` may submit claims into the collection: its creator, a submitter, or anyone when it is open to all. */
export function maySubmitInto(collection: Pick<Collection, 'openToAll' | 'createdBy' | 'submitters'>, principalDid: string): boolean {
  return collection.openToAll || collection.createdBy === principalDid || collection.submitters.includes(principalDid);
}
