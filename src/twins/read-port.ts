// Area A's port for reading its data from another area (area C's query node): entities,
// collections and claims in commit order, single lookups, and the claim tallies of collections,
// in area A's own shapes; the reader adapts the shapes. Its SQL is read-port.repository.ts.
// Paging goes both ways from an inclusive `seq` (Cosmos pages in reverse too), by offset or not,
// in commit order: a row committed later never sorts before a page already read, and a row whose
// `seq` names a position is still named by it.
import type { Collection, Entity, KptClaim } from '../../generated/openapi/types.gen.ts';

/** Which rows to read: from `fromSeq` on (inclusive) or from an end, skipping `offset`, at most `take`. */
export interface CommitOrderWindow {
  fromSeq?: number;
  offset: number;
  take: number;
  reverse: boolean;
}

/** An item with its place in commit order (what a reader's page keys are made of). */
export interface Sequenced<T> {
  seq: number;
  item: T;
}

/** A page asked from a `seq` no row has: a position this service never handed out. */
export class UnknownPositionError extends Error {
  constructor(seq: number) {
    super(`no row has seq ${seq}`);
  }
}

export interface OrderedReads<T> {
  /** Throws UnknownPositionError for a `fromSeq` no row has, where the order cannot place it. */
  page(window: CommitOrderWindow): Promise<Sequenced<T>[]>;
  count(): Promise<number>;
}

/** What a ledger view shows of a KPT claim: no measurements, the credential by id and issuer. */
export interface ClaimRecord {
  id: string;
  collectionId: string;
  householdId: string;
  status: KptClaim['status'];
  /** DID of the validator that issued the credential; empty before verification. */
  issuer: string;
  /** Id of the verifiable credential; empty when none was issued. */
  credentialId: string;
  createdAt: string;
  updatedAt: string;
  verifiedAt?: string;
  /** Set when its credential is withdrawn: revoked (for good) or suspended. */
  withdrawn?: 'revoked' | 'suspended';
}

/** Claims of a collection: all, evaluated (not pending), approved (verified, the credential standing), rejected, and verified ones whose credential is revoked or suspended. */
export interface ClaimTally {
  count: number;
  evaluated: number;
  approved: number;
  rejected: number;
  revoked: number;
  suspended: number;
}

export interface TwinsReadPort {
  entities: OrderedReads<Entity>;
  entity(did: string): Promise<Entity | undefined>;
  collections: OrderedReads<Collection>;
  collection(id: string): Promise<Collection | undefined>;
  /** The tally of each collection named (zeros for one without claims). */
  tallies(collectionIds: string[]): Promise<Map<string, ClaimTally>>;
  claims: OrderedReads<ClaimRecord>;
  claim(id: string): Promise<ClaimRecord | undefined>;
}
