// The node's reads over area A's tables. Single lookups and row parsing are area A's
// (findEntityByDid, findClaimById, getCollection, *FromRow); its page functions only page
// forwards from an exclusive cursor, while Cosmos also pages in reverse, so the ordered scans
// over `seq` (insertion order) are here. Keys handed out are that sequence as a decimal string.
import { Code, ConnectError } from '@connectrpc/connect';
import type { Db } from '../../platform/db/index.ts';
import { claimFromRow, type ClaimRow } from '../../twins/claims.repository.ts';
import { collectionFromRow, type CollectionRow } from '../../twins/collections.repository.ts';
import { entityFromRow, type EntityRow } from '../../twins/entities.repository.ts';
import { findClaimById, findEntityByDid, getCollection } from '../../twins/index.ts';
import type { Collection } from '../../../generated/openapi/types.gen.ts';
import type { ChainReadModel, CollectionWithCounts, Entity, KptClaim } from './model.ts';
import type { OrderedStore, PageWindow } from './pagination.ts';

function keySeq(key: string): number {
  if (!/^\d{1,15}$/.test(key)) throw new ConnectError('pagination key is not a key this node issued', Code.InvalidArgument);
  return Number(key);
}

/** An OrderedStore over one table of area A, ordered by `seq`. */
function seqStore<R extends { seq: number }, T>(db: Db, table: string, map: (rows: R[]) => Promise<T[]>): OrderedStore<T> {
  const seqOf = new WeakMap<object, number>();
  return {
    async fetch(w: PageWindow) {
      const q = db<R>(table).select('*').orderBy('seq', w.reverse ? 'desc' : 'asc').limit(w.take);
      if (w.fromKey !== undefined) q.where('seq', w.reverse ? '<=' : '>=', keySeq(w.fromKey));
      if (w.offset) q.offset(w.offset);
      const rows = (await q) as R[];
      const items = await map(rows);
      items.forEach((item, i) => seqOf.set(item as object, rows[i]!.seq));
      return items;
    },
    async count() {
      const c = (await db(table).count({ n: '*' }).first()) as { n: number | string };
      return Number(c.n);
    },
    keyOf: (item) => String(seqOf.get(item as object)),
  };
}

interface CountsRow {
  collection_id: string;
  count: number | string;
  evaluated: number | string | null;
  approved: number | string | null;
  rejected: number | string | null;
}

export class ChainRepository implements ChainReadModel {
  readonly entities: OrderedStore<Entity>;
  readonly claims: OrderedStore<KptClaim>;
  readonly collections: OrderedStore<CollectionWithCounts>;

  constructor(private readonly db: Db) {
    this.entities = seqStore<EntityRow, Entity>(db, 'twin_entities', async (rows) => rows.map(entityFromRow));
    this.claims = seqStore<ClaimRow, KptClaim>(db, 'kpt_claims', async (rows) => rows.map(claimFromRow));
    this.collections = seqStore<CollectionRow, CollectionWithCounts>(db, 'kpt_collections', (rows) => this.withCounts(rows.map(collectionFromRow)));
  }

  getEntity(did: string): Promise<Entity | undefined> {
    return findEntityByDid(this.db, did);
  }

  getClaim(id: string): Promise<KptClaim | undefined> {
    return findClaimById(this.db, id);
  }

  async getCollection(id: string): Promise<CollectionWithCounts | undefined> {
    const c = await getCollection(this.db, id);
    return c ? (await this.withCounts([c]))[0] : undefined;
  }

  /** Claim counts of the collections (one aggregate query per page), as a Collection carries them. */
  private async withCounts(collections: Collection[]): Promise<CollectionWithCounts[]> {
    if (!collections.length) return [];
    const rows = (await this.db('kpt_claims')
      .whereIn('collection_id', collections.map((c) => c.id))
      .groupBy('collection_id')
      .select('collection_id')
      .count({ count: '*' })
      .select(
        this.db.raw("sum(case when status <> 'pending' then 1 else 0 end) as evaluated"),
        this.db.raw("sum(case when status = 'verified' then 1 else 0 end) as approved"),
        this.db.raw("sum(case when status = 'rejected' then 1 else 0 end) as rejected"),
      )) as unknown as CountsRow[];
    const byId = new Map(rows.map((r) => [r.collection_id, r]));
    return collections.map((c) => {
      const r = byId.get(c.id);
      return { ...c, count: Number(r?.count ?? 0), evaluated: Number(r?.evaluated ?? 0), approved: Number(r?.approved ?? 0), rejected: Number(r?.rejected ?? 0) };
    });
  }
}
