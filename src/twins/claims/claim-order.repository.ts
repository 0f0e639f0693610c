// The commit order of KPT claims (CommitOrder in platform/db/sql.ts), SQL that only the claims
// and read-port repositories use. Claim inserts take no `seq` turn. On PostgreSQL rows are
// ordered by the inserting transaction's id, then `seq` (migration 104), and a reader is given
// only rows of transactions older than every claim writer still in flight
// (byInsertingTransaction's horizon, shared with area A's events): any row not yet committed, or
// inserted later, has a transaction id at least that horizon, so it sorts after every row
// returned. Ordering by `seq` alone with that filter would not do: a transaction with an older
// id can take a larger `seq`.
// The cost: a claim shows up in lists only once every claim insert that took its transaction id
// before it has ended (each statement is bounded by the database deadline). Entities and
// collections take the turn, as does everything on SQLite (one writer): there `seq` is the order.
import { dbClientOf, type Db } from '../../platform/db/index.ts';
import { byInsertingTransaction, SEQ_ORDER, settleCommitOrder, type AdvisoryLock, type CommitOrder } from '../../platform/db/sql.ts';

/**
 * Held (shared) by every transaction inserting claims, from before it takes a transaction id
 * (its first statement) to its end: the readers' horizon tells claim writers in flight by it.
 */
export const CLAIM_WRITERS: AdvisoryLock = { name: 'kpt-claim-writers', mode: 'shared' };

const claimsByTransaction: CommitOrder = byInsertingTransaction('kpt_claims', CLAIM_WRITERS);

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

/**
 * At start-up: claims and area A's events (both paged by inserting transaction on PostgreSQL)
 * keep their order after the database is moved to another cluster (settleCommitOrder). The
 * offset raised, when the database was moved.
 */
export const settleClaimAndEventOrder = (db: Db): Promise<string | undefined> => settleCommitOrder(db, ['kpt_claims', 'twin_events']);
