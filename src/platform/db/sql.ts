// The one way to run a unit of work (inTransaction), and the advisory locks and commit orders the
// areas build their queries with. Queries themselves are Knex's builder over generated/db's table
// types; the same query runs on both databases.
import type { Knex } from 'knex';
import { dbClientOf, rowsOf, type Db } from './index.ts';

/** A database handle inside a unit of work: one transaction's connection (see inTransaction). */
export type Sql = Db;

/** The largest `seq` (a 32-bit integer on PostgreSQL); a larger one must not reach a query. */
export const MAX_SEQ = 2 ** 31 - 1;

/**
 * Runs fn in one transaction: its writes are committed when it resolves and undone when it
 * throws. On SQLite the transaction takes the write lock when it begins (see clients.ts); on
 * PostgreSQL it is one connection's BEGIN..COMMIT, and rows it reads to change are locked with
 * `forUpdate()` (which SQLite, with its one writer, needs not and leaves out).
 */
export function inTransaction<T>(db: Db, fn: (sql: Sql) => Promise<T>): Promise<T> {
  return db.transaction((trx) => fn(trx));
}

/**
 * Whether the database runs one writing transaction at a time (SQLite): what a transaction read
 * then includes every transaction committed before it, and every later one reads its writes, so
 * two transactions never each miss the other's write (no write skew to catch up on).
 */
export const writesOneAtATime = (db: Db): boolean => dbClientOf(db) === 'sqlite';

/**
 * Rows per multi-row insert. Knex writes one on SQLite as a single compound SELECT, which SQLite
 * refuses past 500 terms, and both databases bound a statement's parameters.
 */
const ROWS_PER_INSERT = 500;

/** Inserts `rows` with `insert`, in statements of at most ROWS_PER_INSERT rows, in their order. */
export async function insertInSlices<R>(rows: readonly R[], insert: (slice: R[]) => PromiseLike<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await insert(rows.slice(i, i + ROWS_PER_INSERT));
}

/** A fragment of SQL with its bound values, for Knex's `whereRaw` / `orderByRaw`. */
export interface SqlFragment {
  sql: string;
  bindings: readonly Knex.Value[];
}

/**
 * Call just before inserting into a table paged by `seq`, in the inserting transaction. On
 * PostgreSQL a sequence hands out `seq` at insert, not at commit: a row could commit after one
 * with a larger `seq`, and a reader paging by `seq` would pass it for good. Here a row takes its
 * `seq` only once every other transaction inserting into the table (in this schema) has ended,
 * so `seq` order is commit order. Take it for one table per transaction, and after it no lock
 * that a transaction waiting for the turn could hold. SQLite commits one writer at a time.
 * It suits tables written rarely; one written by many at once needs a CommitOrder of its own.
 */
export function takeSeqTurn(sql: Sql, table: string): Promise<void> {
  return lockUntilCommit(sql, `seq-order:${table}`);
}

/**
 * How a follower pages a table in an order nothing committed later can sort before, as SQL
 * over the table's columns (unqualified). SEQ_ORDER is that order wherever `seq` is commit order
 * (takeSeqTurn, or SQLite's one writer); an area whose inserts take no turn gives its own (area
 * A's claims: twins/claims/claim-order.repository.ts). A position is still named by its row's
 * `seq` (cursors and keys do not change); a `seq` that names no row has no position.
 */
/** The tables paged by inserting transaction on PostgreSQL (byInsertingTransaction). */
export type InsertOrderedTable = 'kpt_claims' | 'twin_events';

export interface CommitOrder {
  /** `order by` columns in the given direction. */
  orderBy(direction: 'asc' | 'desc'): string;
  /** Rows a reader may be given now (undefined: all it sees). */
  horizon?: SqlFragment;
  /** A row's position against the row whose `seq` is given. */
  relativeTo(op: '>' | '>=' | '<=', seq: number): SqlFragment;
  /**
   * Set when relativeTo places rows against a row that exists only (no row, no rows): a page
   * from a `seq` no row has is refused, lest a made-up cursor read as the end of the list.
   */
  anchoredTo?: InsertOrderedTable;
}

export const SEQ_ORDER: CommitOrder = {
  orderBy: (direction) => `seq ${direction}`,
  relativeTo: (op, seq) => ({ sql: `seq ${op} ?`, bindings: [seq] }),
};

/**
 * The key of the advisory lock of the given name, within the current schema: advisory locks
 * are database-wide, and deployments (or test runs) in other schemas of the same database must
 * not wait for each other. Its one bound value is the name.
 */
export const LOCK_KEY_SQL = "hashtextextended(current_schema() || ':' || ?, 0)";

/**
 * Waits for, then holds until the transaction ends, the PostgreSQL advisory lock `name` (in this
 * schema): transactions taking the same name run that part one at a time. SQLite needs none: it
 * runs one writing transaction at a time.
 */
export function lockUntilCommit(sql: Sql, name: string): Promise<void> {
  return locksUntilCommit(sql, [{ name, mode: 'exclusive' }]);
}

export interface AdvisoryLock {
  name: string;
  mode: 'exclusive' | 'shared';
}

/**
 * lockUntilCommit for several locks in one statement, taken in the order given; a `shared` lock
 * waits only for transactions holding it exclusively (and for those waiting to). Outside a
 * transaction the statement is its own: it waits for the locks and lets them go.
 */
export async function locksUntilCommit(db: Sql, locks: AdvisoryLock[]): Promise<void> {
  if (dbClientOf(db) !== 'postgres' || !locks.length) return;
  const calls = locks.map(({ mode }) => `pg_advisory_xact_lock${mode === 'shared' ? '_shared' : ''}(${LOCK_KEY_SQL})`);
  await db.raw(`select ${calls.join(', ')}`, locks.map((l) => l.name));
}

/**
 * The oldest `tx` a row of a table written under `writers` not yet visible to this statement can
 * have: among the transactions its snapshot sees in flight, the oldest that holds the lock now,
 * or that has ended since (it may have been one); else the snapshot's next id; plus the offset
 * of commit_order (settleCommitOrder). One in flight that holds no such lock took its id
 * before any insert and holds it to its end, so inserts none. The holders are read before any end
 * is checked (the subquery is built at its first use), so a writer ending in between is caught by
 * the second test. Its one bound value is the lock's name.
 */
const WRITERS_HORIZON = `select (coalesce((select min(x) from pg_snapshot_xip(q.s) x
    where x::text::bigint % 4294967296 in (
        select t.transactionid::text::bigint from pg_locks w join pg_locks t on t.pid = w.pid
        where w.locktype = 'advisory' and w.granted and w.objsubid = 1
          and w.database = (select oid from pg_database where datname = current_database())
          and w.classid = ((k.key >> 32) & 4294967295)::oid and w.objid = (k.key & 4294967295)::oid
          and t.locktype = 'transactionid' and t.mode = 'ExclusiveLock' and t.granted)
      or pg_xact_status(x) <> 'in progress'), pg_snapshot_xmax(q.s))::text::numeric + o.tx_offset)::text::xid8
  from (select pg_current_snapshot() as s) q, (select ${LOCK_KEY_SQL} as key) k, commit_order o where o.id = 1`;

/**
 * PostgreSQL: the commit order of a table whose rows record their inserting transaction (a `tx`
 * column defaulting to pg_current_xact_id(), plus commit_order's offset after a move) and whose
 * every inserting transaction holds
 * `writers` (shared) from before it takes a transaction id (its first write or row lock) to its
 * end. Rows are ordered by `tx`, then `seq`, and a reader is given only rows of transactions older
 * than every writer still in flight: inserts never wait for each other, and nothing committed
 * later sorts before a row a follower was given.
 */
export function byInsertingTransaction(table: InsertOrderedTable, writers: AdvisoryLock): CommitOrder {
  return {
    orderBy: (direction) => `tx ${direction}, seq ${direction}`,
    horizon: { sql: `tx < (${WRITERS_HORIZON})`, bindings: [writers.name] },
    relativeTo: (op, seq) => ({ sql: `(tx, seq) ${op} (select p.tx, p.seq from ${table} p where p.seq = ?)`, bindings: [seq] }),
    anchoredTo: table,
  };
}

/**
 * PostgreSQL, at start-up, for the tables paged byInsertingTransaction: when a stored row's `tx`
 * is not behind this cluster's next transaction id (with the offset), the database was moved here
 * from a cluster whose ids were ahead. The offset then moves past the last row's `tx`, in
 * commit_order (for readers' horizon) and in the tables' `tx` defaults (a constant there: an
 * insert reads no table for it), so that readers are given every stored row and each new row
 * sorts after them. Taken under a lock: instances starting at once raise it once. The new
 * offset, when it changed.
 */
export async function settleCommitOrder(db: Db, tables: readonly InsertOrderedTable[]): Promise<string | undefined> {
  if (dbClientOf(db) !== 'postgres' || !tables.length) return undefined;
  return inTransaction(db, async (sql) => {
    await lockUntilCommit(sql, 'commit-order');
    const last = tables.map(() => '(select max(tx) from ??)').join(', ');
    const [moved] = await rowsOf<{ tx_offset: string }>(
      sql.raw(
        `select (l.tx - l.next + 1)::text as tx_offset
          from (select greatest(${last})::text::numeric as tx, pg_snapshot_xmax(pg_current_snapshot())::text::numeric as next) l, commit_order o
          where o.id = 1 and l.tx >= l.next + o.tx_offset`,
        [...tables],
      ),
    );
    if (!moved) return undefined;
    // Digits only (a numeric's text): a default is DDL, which takes no bound values.
    if (!/^\d+$/.test(moved.tx_offset)) throw new Error(`commit order offset ${moved.tx_offset} is not a whole number`);
    await sql.raw('update commit_order set tx_offset = ? where id = 1', [moved.tx_offset]);
    for (const table of tables) {
      await sql.raw(`alter table ?? alter column tx set default ((pg_current_xact_id()::text::numeric + ${moved.tx_offset})::text::xid8)`, [table]);
    }
    return moved.tx_offset;
  });
}
