// The commit order of KPT claims (CommitOrder in platform/db/sql.ts). Claim inserts take no
// `seq` turn. On PostgreSQL rows are ordered by the inserting transaction's id, then `seq`
// (migration 104), and a reader is given only rows of transactions older than every claim
// writer still in flight (CLAIMS_HORIZON): any row not yet committed, or inserted later, has a
// transaction id at least that horizon, so it sorts after every row returned. Ordering by `seq`
// alone with that filter would not do: a transaction with an older id can take a larger `seq`.
// The cost: a claim shows up in lists only once every claim insert that took its transaction id
// before it has ended (each statement is bounded by the database deadline). Entities and
// collections take the turn, as does everything on SQLite (one writer): there `seq` is the order.
import { dbClientOf, type Db } from '../../platform/db/index.ts';
import { LOCK_KEY_SQL, SEQ_ORDER, type AdvisoryLock, type CommitOrder } from '../../platform/db/sql.ts';

/**
 * Held (shared) by every transaction inserting claims, from before it takes a transaction id
 * (its first statement) to its end: the readers' horizon tells claim writers in flight by it.
 */
export const CLAIM_WRITERS: AdvisoryLock = { name: 'kpt-claim-writers', mode: 'shared' };


/**
 * The oldest transaction id a claim not yet visible to this statement can have: among the
 * transactions its snapshot sees in flight, the oldest that holds CLAIM_WRITERS now, or that has
 * ended since (it may have been one); else the snapshot's next id. One in flight that holds no
 * CLAIM_WRITERS took its id before any claim insert and holds it to its end, so inserts none.
 * The holders are read before any end is checked (the subquery is built at its first use), so a
 * writer ending in between is caught by the second test.
 */
const CLAIMS_HORIZON = `select coalesce((select min(x) from pg_snapshot_xip(q.s) x
    where x::text::bigint % 4294967296 in (
        select t.transactionid::text::bigint from pg_locks w join pg_locks t on t.pid = w.pid
        where w.locktype = 'advisory' and w.granted and w.objsubid = 1
          and w.database = (select oid from pg_database where datname = current_database())
          and w.classid = ((k.key >> 32) & 4294967295)::oid and w.objid = (k.key & 4294967295)::oid
          and t.locktype = 'transactionid' and t.mode = 'ExclusiveLock' and t.granted)
      or pg_xact_status(x) <> 'in progress'), pg_snapshot_xmax(q.s))
  from (select pg_current_snapshot() as s) q, (select ${LOCK_KEY_SQL} as key) k`;

const claimsByTransaction: CommitOrder = {
  orderBy: (direction) => `tx ${direction}, seq ${direction}`,
  horizon: { sql: `tx < (${CLAIMS_HORIZON})`, bindings: [CLAIM_WRITERS.name] },
  relativeTo: (op, seq) => ({ sql: `(tx, seq) ${op} (select p.tx, p.seq from kpt_claims p where p.seq = ?)`, bindings: [seq] }),
  anchoredTo: 'kpt_claims',
};

/** Claims by `seq` (SQLite), placed against claims that exist only, as on PostgreSQL: both databases refuse the same cursors. */
const claimsBySeq: CommitOrder = { ...SEQ_ORDER, anchoredTo: 'kpt_claims' };

/**
 * Whether a page read from `seq` in `order` names a position no row has (a cursor or key this
 * service did not issue): on PostgreSQL its page would come out empty and read as the end of
 * the list.
 */
export async function missingAnchor(db: Db, order: CommitOrder, seq: number | undefined): Promise<boolean> {
  if (!order.anchoredTo || seq === undefined) return false;
  return !(await db(order.anchoredTo).first('seq').where('seq', seq));
}

/** The commit order of one of area A's tables: its claims by transaction on PostgreSQL, else `seq`. */
export function commitOrder(db: Db, table: 'twin_entities' | 'kpt_collections' | 'kpt_claims'): CommitOrder {
  if (table !== 'kpt_claims') return SEQ_ORDER;
  return dbClientOf(db) === 'postgres' ? claimsByTransaction : claimsBySeq;
}
