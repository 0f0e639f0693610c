// The node's reads over area A's tables. Single lookups and row parsing are area A's
// (findEntityByDid, findClaimById, getCollection, *FromRow); its page functions only page
// forwards from an exclusive cursor, while Cosmos also pages in reverse, so the ordered scans
// in commit order (`seq`, or on PostgreSQL for claims the inserting transaction, then `seq`) are here. Keys handed out are that sequence as a decimal string.
// Claim pages read only the columns a chain Claim shows: a KPT claim row also carries the
// request body, rule checks and measurements, which would be parsed for nothing.
import { Code, ConnectError } from '@connectrpc/connect';
import { dbClientOf, type Db } from '../../platform/db/index.ts';
import { commitOrder, MAX_SEQ } from '../../platform/db/sql.ts';
import type { ClaimRow } from '../../twins/claims.repository.ts';
import { collectionFromRow, type CollectionRow } from '../../twins/collections.repository.ts';
import { entityFromRow, type EntityRow } from '../../twins/entities.repository.ts';
import { findClaimById, findEntityByDid, getCollection } from '../../twins/index.ts';
import type { Collection } from '../../../generated/openapi/types.gen.ts';
import type { ChainReadModel, ClaimView, CollectionWithCounts, Entity, KptClaim } from './model.ts';
import type { OrderedStore, PageWindow } from './pagination.ts';

function keySeq(key: string): number {
  const seq = /^\d{1,10}$/.test(key) ? Number(key) : NaN;
  if (!(seq <= MAX_SEQ)) throw new ConnectError('pagination key is not a key this node issued', Code.InvalidArgument);
  return seq;
}

/**
 * An OrderedStore over one table of area A, in its commit order (commitOrder in sql.ts: rows
 * committed later never sort before a page already read).
 */
function seqStore<R extends { seq: number }, T>(
  db: Db,
  table: 'twin_entities' | 'kpt_collections' | 'kpt_claims',
  map: (rows: R[]) => Promise<T[]>,
  columns: string[] = ['*'],
): OrderedStore<T> {
  const seqOf = new WeakMap<object, number>();
  const order = commitOrder(dbClientOf(db), table);
  const visible = () => (order.horizon ? db(table).whereRaw(order.horizon) : db(table));
  return {
    async fetch(w: PageWindow) {
      const q = visible().select(columns).orderByRaw(order.orderBy(w.reverse ? 'desc' : 'asc')).limit(w.take);
      if (w.fromKey !== undefined) q.whereRaw(order.relativeTo(w.reverse ? '<=' : '>='), [keySeq(w.fromKey)]);
      if (w.offset) q.offset(w.offset);
      const rows = (await q) as R[];
      const items = await map(rows);
      items.forEach((item, i) => seqOf.set(item as object, rows[i]!.seq));
      return items;
    },
    async count() {
      const c = (await visible().count({ n: '*' }).first()) as { n: number | string };
      return Number(c.n);
    },
    keyOf: (item) => String(seqOf.get(item as object)),
  };
}

const CLAIM_VIEW_COLUMNS = ['seq', 'id', 'collection_id', 'household_did', 'status', 'credential', 'verifiable_credential', 'created_at', 'updated_at', 'verified_at'] as const;
type ClaimViewRow = Pick<ClaimRow, (typeof CLAIM_VIEW_COLUMNS)[number]>;

function claimViewOfRow(r: ClaimViewRow): ClaimView {
  const credential = r.credential ? (JSON.parse(r.credential) as { issuer?: string }) : undefined;
  const vc = r.verifiable_credential ? (JSON.parse(r.verifiable_credential) as { id?: string; issuer?: string }) : undefined;
  return {
    id: r.id,
    collectionId: r.collection_id,
    householdId: r.household_did,
    status: r.status as ClaimView['status'],
    oracle: credential?.issuer ?? vc?.issuer ?? '',
    credentialId: vc?.id ?? '',
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.verified_at ? { verifiedAt: r.verified_at } : {}),
  };
}

function claimViewOf(c: KptClaim): ClaimView {
  return {
    id: c.id,
    collectionId: c.collectionId,
    householdId: c.householdId,
    status: c.status,
    oracle: c.credential?.issuer ?? c.verifiableCredential?.issuer ?? '',
    credentialId: c.verifiableCredential?.id ?? '',
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    ...(c.verifiedAt ? { verifiedAt: c.verifiedAt } : {}),
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
  readonly claims: OrderedStore<ClaimView>;
  readonly collections: OrderedStore<CollectionWithCounts>;

  constructor(private readonly db: Db) {
    this.entities = seqStore<EntityRow, Entity>(db, 'twin_entities', async (rows) => rows.map(entityFromRow));
    this.claims = seqStore<ClaimViewRow & { seq: number }, ClaimView>(db, 'kpt_claims', async (rows) => rows.map(claimViewOfRow), [...CLAIM_VIEW_COLUMNS]);
    this.collections = seqStore<CollectionRow, CollectionWithCounts>(db, 'kpt_collections', (rows) => this.withCounts(rows.map(collectionFromRow)));
  }

  getEntity(did: string): Promise<Entity | undefined> {
    return findEntityByDid(this.db, did);
  }

  async getClaim(id: string): Promise<ClaimView | undefined> {
    const c = await findClaimById(this.db, id);
    return c ? claimViewOf(c) : undefined;
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
