// Area A's port for reading its data from another area (area C's query node): entities,
// collections and claims in commit order, single lookups, and the claim tallies of collections,
// in area A's own shapes. The SQL over area A's tables stays here; the reader adapts the shapes.
// Paging goes both ways from an inclusive `seq` (Cosmos pages in reverse too), by offset or not,
// in commit order (commitOrder in claim-order.ts): a row committed later never sorts before a
// page already read, and a row whose `seq` names a position is still named by it.
import { dbClientOf, type Db } from '../platform/db/index.ts';
import { commitOrder } from './claim-order.ts';
import type { Collection, Entity, KptClaim } from '../../generated/openapi/types.gen.ts';
import type { ClaimRow } from './claims.repository.ts';
import { collectionFromRow, getCollection, type CollectionRow } from './collections.repository.ts';
import { entityFromRow, findEntityByDid, type EntityRow } from './entities.repository.ts';

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

export interface OrderedReads<T> {
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
}

/** Claims of a collection: all, evaluated (not pending), verified and rejected. */
export interface ClaimTally {
  count: number;
  evaluated: number;
  approved: number;
  rejected: number;
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

type SeqTable = 'twin_entities' | 'kpt_collections' | 'kpt_claims';

function ordered<R extends { seq: number }, T>(db: Db, table: SeqTable, map: (row: R) => T, columns: readonly string[] = ['*']): OrderedReads<T> {
  const order = commitOrder(dbClientOf(db), table);
  const visible = () => (order.horizon ? db(table).whereRaw(order.horizon) : db(table));
  return {
    async page(w) {
      const q = visible().select(columns).orderByRaw(order.orderBy(w.reverse ? 'desc' : 'asc')).limit(w.take);
      if (w.fromSeq !== undefined) q.whereRaw(order.relativeTo(w.reverse ? '<=' : '>='), [w.fromSeq]);
      if (w.offset) q.offset(w.offset);
      const rows = (await q) as R[];
      return rows.map((r) => ({ seq: r.seq, item: map(r) }));
    },
    async count() {
      const c = (await visible().count({ n: '*' }).first()) as { n: number | string };
      return Number(c.n);
    },
  };
}

// A claim row also carries the request body, rule checks and measurements: not read for nothing.
const CLAIM_RECORD_COLUMNS = ['seq', 'id', 'collection_id', 'household_did', 'status', 'credential', 'verifiable_credential', 'created_at', 'updated_at', 'verified_at'] as const;
type ClaimRecordRow = Pick<ClaimRow, (typeof CLAIM_RECORD_COLUMNS)[number]>;

function claimRecordOf(r: ClaimRecordRow): ClaimRecord {
  const credential = r.credential ? (JSON.parse(r.credential) as { issuer?: string }) : undefined;
  const vc = r.verifiable_credential ? (JSON.parse(r.verifiable_credential) as { id?: string; issuer?: string }) : undefined;
  return {
    id: r.id,
    collectionId: r.collection_id,
    householdId: r.household_did,
    status: r.status,
    issuer: credential?.issuer ?? vc?.issuer ?? '',
    credentialId: vc?.id ?? '',
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.verified_at ? { verifiedAt: r.verified_at } : {}),
  };
}

interface TallyRow {
  collection_id: string;
  count: number | string;
  evaluated: number | string | null;
  approved: number | string | null;
  rejected: number | string | null;
}

export function twinsReadPort(db: Db): TwinsReadPort {
  return {
    entities: ordered<EntityRow, Entity>(db, 'twin_entities', entityFromRow),
    entity: (did) => findEntityByDid(db, did),
    collections: ordered<CollectionRow, Collection>(db, 'kpt_collections', collectionFromRow),
    collection: (id) => getCollection(db, id),
    claims: ordered<ClaimRecordRow, ClaimRecord>(db, 'kpt_claims', claimRecordOf, CLAIM_RECORD_COLUMNS),
    async claim(id) {
      const row = (await db('kpt_claims').select(CLAIM_RECORD_COLUMNS).where({ id }).first()) as ClaimRecordRow | undefined;
      return row && claimRecordOf(row);
    },
    async tallies(collectionIds) {
      if (!collectionIds.length) return new Map();
      const rows = (await db('kpt_claims')
        .whereIn('collection_id', collectionIds)
        .groupBy('collection_id')
        .select('collection_id')
        .count({ count: '*' })
        .select(
          db.raw("sum(case when status <> 'pending' then 1 else 0 end) as evaluated"),
          db.raw("sum(case when status = 'verified' then 1 else 0 end) as approved"),
          db.raw("sum(case when status = 'rejected' then 1 else 0 end) as rejected"),
        )) as unknown as TallyRow[];
      const byId = new Map(rows.map((r) => [r.collection_id, r]));
      return new Map(
        collectionIds.map((id) => {
          const r = byId.get(id);
          return [id, { count: Number(r?.count ?? 0), evaluated: Number(r?.evaluated ?? 0), approved: Number(r?.approved ?? 0), rejected: Number(r?.rejected ?? 0) }];
        }),
      );
    },
  };
}
