// The only SQL of area A's read port (read-port.ts): its tables in commit order
// (commitOrder in claims/claim-order.repository.ts), single lookups and the claim tallies.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/index.ts';
import { commitOrder, missingAnchor } from './claims/claim-order.repository.ts';
import { credentialIdOf } from './claims/claim-seal.ts';
import type { ClaimRow } from './claims/stored-claim.ts';
import { collectionFromRow, getCollection, type CollectionRow } from './claims/collections.repository.ts';
import { entityFromRow, findEntityByDid, type EntityRow } from './entities/entities.repository.ts';
import { UnknownPositionError, type ClaimRecord, type ClaimTally, type OrderedReads, type TwinsReadPort } from './read-port.ts';

type SeqTable = 'twin_entities' | 'kpt_collections' | 'kpt_claims';

/** `rows` makes a query of the table's rows as the reader maps them, in no order. */
function ordered<R extends { seq: number }, T>(db: Db, table: SeqTable, rows: () => Knex.QueryBuilder, map: (row: R) => T): OrderedReads<T> {
  const order = commitOrder(db, table);
  const visible = (q: Knex.QueryBuilder) => (order.horizon ? q.whereRaw(order.horizon.sql, order.horizon.bindings) : q);
  return {
    async page(w) {
      const q = visible(rows());
      if (w.fromSeq !== undefined) {
        const from = order.relativeTo(w.reverse ? '<=' : '>=', w.fromSeq);
        q.whereRaw(from.sql, from.bindings);
      }
      q.orderByRaw(order.orderBy(w.reverse ? 'desc' : 'asc')).limit(w.take);
      if (w.offset > 0) q.offset(w.offset);
      const found = (await q) as R[];
      if (await missingAnchor(db, order, w.fromSeq)) throw new UnknownPositionError(w.fromSeq!);
      return found.map((r) => ({ seq: r.seq, item: map(r) }));
    },
    async count() {
      const c = (await visible(db(table)).count({ n: '*' }).first()) as { n: number | string };
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
const WITHDRAWN_STATE = "(case when kpt_claims.credential_revoked then 'revoked' when kpt_claims.credential_suspended then 'suspended' end)";
const claimRecords = (db: Db) =>
  db('kpt_claims').select(...CLAIM_RECORD_COLUMNS, db.raw('(kpt_claims.verifiable_credential is not null) as signed'), db.raw(`${WITHDRAWN_STATE} as withdrawn`));

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

/** A collection's tally as the database counts it (SQLite and PostgreSQL answer counts as numbers or text). */
type TallyRow = { collection_id: string } & Record<keyof ClaimTally, unknown>;

/** Claims of a status condition, counted per group. */
const countWhere = (condition: string, as: string) => `sum(case when ${condition} then 1 else 0 end) as ${as}`;

export function twinsReadPort(db: Db): TwinsReadPort {
  return {
    entities: ordered(db, 'twin_entities', () => db('twin_entities'), (r: EntityRow) => entityFromRow(r)),
    entity: (did) => findEntityByDid(db, did),
    collections: ordered(db, 'kpt_collections', () => db('kpt_collections'), (r: CollectionRow) => collectionFromRow(r)),
    collection: (id) => getCollection(db, id),
    claims: ordered(db, 'kpt_claims', () => claimRecords(db), (r: ClaimRecordRow) => claimRecordOf(r)),
    async claim(id) {
      const row = (await claimRecords(db).where('id', id).first()) as ClaimRecordRow | undefined;
      return row && claimRecordOf(row);
    },
    async tallies(collectionIds) {
      if (!collectionIds.length) return new Map();
      const rows = await db('kpt_claims')
        .whereIn('collection_id', collectionIds)
        .groupBy('collection_id')
        .select<TallyRow[]>(
          'collection_id',
          db.raw('count(*) as count'),
          db.raw(countWhere("status <> 'pending'", 'evaluated')),
          db.raw(countWhere(`status = 'verified' and ${WITHDRAWN_STATE} is null`, 'approved')),
          db.raw(countWhere("status = 'rejected'", 'rejected')),
          db.raw(countWhere(`status = 'verified' and ${WITHDRAWN_STATE} = 'revoked'`, 'revoked')),
          db.raw(countWhere(`status = 'verified' and ${WITHDRAWN_STATE} = 'suspended'`, 'suspended')),
        );
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
