// Area A's port for reading its data from another area (area C's query node): entities,
// collections and claims in commit order, single lookups, and the claim tallies of collections,
// in area A's own shapes. The SQL over area A's tables stays here; the reader adapts the shapes.
// Paging goes both ways from an inclusive `seq` (Cosmos pages in reverse too), by offset or not,
// in commit order (commitOrder in claim-order.ts): a row committed later never sorts before a
// page already read, and a row whose `seq` names a position is still named by it.
import { sql, type SelectQueryBuilder } from 'kysely';
import { dbClientOf, type Database, type Db } from '../platform/db/index.ts';
import { prepared } from '../platform/db/prepared.ts';
import { commitOrder, missingAnchor } from './claim-order.ts';
import { credentialIdOf } from './claim-seal.ts';
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

type SeqTable = 'twin_entities' | 'kpt_collections' | 'kpt_claims';

/** `rows`: the table's rows as the reader maps them, in no order. */
function ordered<TB extends SeqTable, R extends { seq: number }, T>(
  db: Db,
  table: TB,
  rows: SelectQueryBuilder<Database, TB, R>,
  map: (row: R) => T,
): OrderedReads<T> {
  const order = commitOrder(dbClientOf(db), table);
  const visible = <O>(q: SelectQueryBuilder<Database, TB, O>) => (order.horizon ? q.where(order.horizon) : q);
  return {
    async page(w) {
      const found = await visible(rows)
        .$if(w.fromSeq !== undefined, (q) => q.where(order.relativeTo(w.reverse ? '<=' : '>=', w.fromSeq!)))
        .orderBy(order.orderBy(w.reverse ? 'desc' : 'asc'))
        .limit(w.take)
        .$if(w.offset > 0, (q) => q.offset(w.offset))
        .execute();
      if (await missingAnchor(db, order, w.fromSeq)) throw new UnknownPositionError(w.fromSeq!);
      return found.map((r) => ({ seq: r.seq, item: map(r) }));
    },
    async count() {
      const c = await visible(rows.clearSelect().select((eb) => eb.fn.countAll().as('n'))).executeTakeFirstOrThrow();
      return Number(c.n);
    },
  };
}

// A claim row also carries the request body, rule checks and measurements: not read for nothing.
// Nor is its signed credential (2 kB or more), whose id is the claim's (credentialIdOf): read and
// parsed for its id, it was a quarter of the server's time on a page of 50 claims, and as much again in GC.
const CLAIM_RECORD_COLUMNS = ['seq', 'id', 'collection_id', 'household_did', 'status', 'credential', 'created_at', 'updated_at', 'verified_at'] as const;
type ClaimRecordRow = Pick<ClaimRow, (typeof CLAIM_RECORD_COLUMNS)[number]> & { signed: boolean | number; withdrawn: 'revoked' | 'suspended' | null };
/** A claim's credential withdrawn ('revoked', 'suspended') or not (null). */
const withdrawnState = sql<'revoked' | 'suspended' | null>`(case when kpt_claims.credential_revoked then 'revoked' when kpt_claims.credential_suspended then 'suspended' end)`;
const claimRecords = (db: Db) =>
  db
    .selectFrom('kpt_claims')
    .select(CLAIM_RECORD_COLUMNS)
    .select([sql<boolean | number>`(kpt_claims.verifiable_credential is not null)`.as('signed'), withdrawnState.as('withdrawn')])
    .$narrowType<Pick<ClaimRow, 'status'>>();

/** One claim's record: planned once, as area A's own read of a claim by id (claims.repository.ts claimById). */
const claimRecordById = prepared((db: Db, id: string) => claimRecords(db).where('id', '=', id), { planOnce: 'also alone', sharesRoundTrip: true });

function claimRecordOf(r: ClaimRecordRow): ClaimRecord {
  // The summary names the issuer, as the signed credential does (both are sealed together).
  const credential = r.credential ? (JSON.parse(r.credential) as { issuer?: string }) : undefined;
  return {
    id: r.id,
    collectionId: r.collection_id,
    householdId: r.household_did,
    status: r.status,
    issuer: credential?.issuer ?? '',
    credentialId: r.signed ? credentialIdOf(r.id) : '',
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.verified_at ? { verifiedAt: r.verified_at } : {}),
    ...(r.withdrawn ? { withdrawn: r.withdrawn } : {}),
  };
}

/** Claims of a status condition, counted per group. */
const countWhere = (condition: ReturnType<typeof sql<boolean>>) => sql<number | string | null>`sum(case when ${condition} then 1 else 0 end)`;

export function twinsReadPort(db: Db): TwinsReadPort {
  return {
    entities: ordered(db, 'twin_entities', db.selectFrom('twin_entities').selectAll(), (r: EntityRow) => entityFromRow(r)),
    entity: (did) => findEntityByDid(db, did),
    collections: ordered(db, 'kpt_collections', db.selectFrom('kpt_collections').selectAll(), (r: CollectionRow) => collectionFromRow(r)),
    collection: (id) => getCollection(db, id),
    claims: ordered(db, 'kpt_claims', claimRecords(db), (r: ClaimRecordRow) => claimRecordOf(r)),
    async claim(id) {
      const row = (await claimRecordById(db, id)).rows[0];
      return row && claimRecordOf(row);
    },
    async tallies(collectionIds) {
      if (!collectionIds.length) return new Map();
      const rows = await db
        .selectFrom('kpt_claims')
        .where('collection_id', 'in', collectionIds)
        .groupBy('collection_id')
        .select((eb) => [
          'collection_id',
          eb.fn.countAll().as('count'),
          countWhere(sql<boolean>`status <> 'pending'`).as('evaluated'),
          countWhere(sql<boolean>`status = 'verified' and ${withdrawnState} is null`).as('approved'),
          countWhere(sql<boolean>`status = 'rejected'`).as('rejected'),
          countWhere(sql<boolean>`status = 'verified' and ${withdrawnState} = 'revoked'`).as('revoked'),
          countWhere(sql<boolean>`status = 'verified' and ${withdrawnState} = 'suspended'`).as('suspended'),
        ])
        .execute();
      const byId = new Map(rows.map((r) => [r.collection_id, r]));
      const n = (v: unknown) => Number(v ?? 0);
      return new Map(
        collectionIds.map((id) => {
          const r = byId.get(id);
          return [id, { count: n(r?.count), evaluated: n(r?.evaluated), approved: n(r?.approved), rejected: n(r?.rejected), revoked: n(r?.revoked), suspended: n(r?.suspended) }];
        }),
      );
    },
  };
}
