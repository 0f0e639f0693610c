// What the query node reads: area A's entities, KPT claims and collections, in area A's own
// shapes (its repositories parse the rows), plus the claim counts a Collection carries.
import type { Collection, Entity, KptClaim } from '../../../generated/openapi/types.gen.ts';
import type { OrderedStore } from './pagination.ts';

export type { Entity, KptClaim };

export interface CollectionWithCounts extends Collection {
  count: number;
  evaluated: number;
  approved: number;
  rejected: number;
  /** Verified claims whose credential is revoked (INVALIDATED). */
  revoked: number;
  /** Verified claims whose credential is suspended (FLAGGED). */
  suspended: number;
}

/** What a chain Claim needs of a KPT claim (the measurements themselves are not on chain). */
export interface ClaimView {
  id: string;
  collectionId: string;
  householdId: string;
  status: KptClaim['status'];
  /** DID of the validator that issued the credential; empty before verification. */
  oracle: string;
  /** Id of the verifiable credential; empty when none was issued. */
  credentialId: string;
  createdAt: string;
  updatedAt: string;
  verifiedAt?: string;
  /** Set when its credential is withdrawn: revoked or suspended. */
  withdrawn?: 'revoked' | 'suspended';
}

export interface ChainReadModel {
  entities: OrderedStore<Entity>;
  getEntity(did: string): Promise<Entity | undefined>;
  claims: OrderedStore<ClaimView>;
  getClaim(id: string): Promise<ClaimView | undefined>;
  collections: OrderedStore<CollectionWithCounts>;
  getCollection(id: string): Promise<CollectionWithCounts | undefined>;
}
