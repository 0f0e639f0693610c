// What the query node reads from Hearth's database, in the node's own terms. The repository
// (src/chain/node/repository.ts) fills these from area A's tables; the services turn them into
// the IXO messages.
import type { OrderedStore } from './pagination.ts';

export interface EntityRecord {
  did: string;
  type: string;
  controller: string;
  services: { id: string; type: string; endpoint: string }[];
  credentials: { type: string; issuer: string }[];
  protocol: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Evaluation status of a claim, from area A's claim status. */
export type ClaimEvaluation = 'PENDING' | 'APPROVED' | 'REJECTED';

export interface ClaimRecord {
  id: string;
  collectionId: string;
  agentDid: string;
  submittedAt: string;
  evaluation: ClaimEvaluation;
  /** Set once the claim was evaluated. */
  evaluatedAt: string | null;
  oracle: string;
  verificationProof: string;
}

export interface CollectionRecord {
  id: string;
  entity: string;
  admin: string;
  protocol: string;
  startDate: string | null;
  endDate: string | null;
  count: number;
  evaluated: number;
  approved: number;
  rejected: number;
  open: boolean;
}

export interface ChainReadModel {
  entities: OrderedStore<EntityRecord>;
  getEntity(did: string): Promise<EntityRecord | undefined>;
  claims: OrderedStore<ClaimRecord>;
  getClaim(id: string): Promise<ClaimRecord | undefined>;
  collections: OrderedStore<CollectionRecord>;
  getCollection(id: string): Promise<CollectionRecord | undefined>;
}
