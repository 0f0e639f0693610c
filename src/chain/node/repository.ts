// The node's read model, on area A's read port (twins/read-port.ts): area A reads its tables,
// the node adapts the shapes. Keys handed out are an item's place in commit order (its `seq`)
// as a decimal string; a page starts at a key inclusive, forwards or in reverse.
import { Code, ConnectError } from '@connectrpc/connect';
import { MAX_SEQ } from '../../platform/db/sql.ts';
import { UnknownPositionError, type ClaimRecord, type OrderedReads, type TwinsReadPort } from '../../twins/read-port.ts';
import type { Collection } from '../../../generated/openapi/types.gen.ts';
import type { ChainReadModel, ClaimView, CollectionWithCounts, Entity } from './model.ts';
import type { OrderedStore } from './pagination.ts';

const keyNotIssued = () => new ConnectError('pagination key is not a key this node issued', Code.InvalidArgument);

function keySeq(key: string): number {
  // The one spelling keyOf gives (no leading zeros), as /v1 cursors.
  const seq = /^(0|[1-9]\d{0,9})$/.test(key) ? Number(key) : NaN;
  if (!(seq <= MAX_SEQ)) throw keyNotIssued();
  return seq;
}

/** An OrderedStore on one of area A's ordered reads; `map` turns a page of area A's items into the node's. */
function storeOf<S, T>(reads: OrderedReads<S>, map: (items: S[]) => Promise<T[]>): OrderedStore<T> {
  const seqOf = new WeakMap<object, number>();
  return {
    async fetch(w) {
      const page = await reads.page({ fromSeq: w.fromKey === undefined ? undefined : keySeq(w.fromKey), offset: w.offset, take: w.take, reverse: w.reverse }).catch((err: unknown) => {
        throw err instanceof UnknownPositionError ? keyNotIssued() : err;
      });
      const items = await map(page.map((p) => p.item));
      items.forEach((item, i) => seqOf.set(item as object, page[i]!.seq));
      return items;
    },
    count: () => reads.count(),
    keyOf: (item) => String(seqOf.get(item as object)),
  };
}

function claimViewOf(c: ClaimRecord): ClaimView {
  return {
    id: c.id,
    collectionId: c.collectionId,
    householdId: c.householdId,
    status: c.status,
    oracle: c.issuer,
    credentialId: c.credentialId,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    ...(c.verifiedAt ? { verifiedAt: c.verifiedAt } : {}),
    ...(c.withdrawn ? { withdrawn: c.withdrawn } : {}),
  };
}

export class ChainRepository implements ChainReadModel {
  readonly entities: OrderedStore<Entity>;
  readonly claims: OrderedStore<ClaimView>;
  readonly collections: OrderedStore<CollectionWithCounts>;

  constructor(private readonly twins: TwinsReadPort) {
    this.entities = storeOf(twins.entities, async (items) => items);
    this.claims = storeOf(twins.claims, async (items) => items.map(claimViewOf));
    this.collections = storeOf(twins.collections, (items) => this.withCounts(items));
  }

  getEntity(did: string): Promise<Entity | undefined> {
    return this.twins.entity(did);
  }

  async getClaim(id: string): Promise<ClaimView | undefined> {
    const c = await this.twins.claim(id);
    return c && claimViewOf(c);
  }

  async getCollection(id: string): Promise<CollectionWithCounts | undefined> {
    const c = await this.twins.collection(id);
    return c ? (await this.withCounts([c]))[0] : undefined;
  }

  /** Claim counts of the collections (one aggregate query per page), as a Collection carries them. */
  private async withCounts(collections: Collection[]): Promise<CollectionWithCounts[]> {
    const tallies = await this.twins.tallies(collections.map((c) => c.id));
    return collections.map((c) => ({ ...c, ...tallies.get(c.id)! }));
  }
}
