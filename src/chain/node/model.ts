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
}

export interface ChainReadModel {
  entities: OrderedStore<Entity>;
  getEntity(did: string): Promise<Entity | undefined>;
  claims: OrderedStore<KptClaim>;
  getClaim(id: string): Promise<KptClaim | undefined>;
  collections: OrderedStore<CollectionWithCounts>;
  getCollection(id: string): Promise<CollectionWithCounts | undefined>;
}
