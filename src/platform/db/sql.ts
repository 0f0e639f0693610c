// The one way to run a unit of work (inTransaction), and the row locks, advisory locks and
// commit orders the areas build their queries with. Queries themselves are Kysely's typed builder
// over generated/db's row types; the same query runs on both databases.
import { CompiledQuery, sql, type Expression, type QueryResult, type RawBuilder, type SqlBool } from 'kysely';
import { behind, isAlsoAlone, named, settledTogether, together, type StatementOutcome } from './drivers.ts';
import { dbClientOf, inPipelinedTransaction, isDatabaseUnavailable, postgresPoolMax, type Db } from './index.ts';

/** A database handle inside a unit of work: one transaction's connection (see inTransaction). */
export type Sql = Db;

/** The largest `seq` (a 32-bit integer on PostgreSQL); a larger one must not reach a query. */
export const MAX_SEQ = 2 ** 31 - 1;

/**
 * Runs fn in one transaction: its writes are committed when it resolves and undone when it
 * throws. On PostgreSQL it is one connection's BEGIN..COMMIT. On SQLite, which has one writer,
 * the calls made in one turn of the event loop are committed together (group commit): each runs
 * alone, in order, in a savepoint of one BEGIN IMMEDIATE..COMMIT on the held connection, and each
 * settles only after that COMMIT, so a caller never answers for writes that are not committed.
 * A failed COMMIT fails every call of its group. Measured on claim submission under load: a
 * transaction each took 1,540 -> 1,005 µs of CPU a claim once without Knex's objects; grouping,
 * whose calls share log writes, took 13-18% more off that. Its rules are tested in
 * test/platform/sql.test.ts.
 */
export function inTransaction<T>(db: Db, fn: (sql: Sql) => Promise<T>): Promise<T> {
  if (dbClientOf(db) === 'postgres') return db.transaction().execute(fn);
  let group = sqliteGroups.get(db);
  if (!group) sqliteGroups.set(db, (group = new SqliteGroupCommit(db)));
  return group.run(fn);
}

/**
 * inTransaction for a unit of work that may share its transaction with others of its kind: on
 * PostgreSQL the calls waiting when a connection is free run together in one transaction, each
 * its statements as it goes, so theirs are pipelined (one round trip for every call's reads,
 * one for every call's writes and the COMMIT) and one COMMIT covers them. This is for units of
 * work that take only shared locks and locks named by their `apart` keys: calls with a key in
 * common never share a transaction, nor run in two groups at once (each would hold what the
 * other waits for). A call that fails with an error `wroteNothing` vouches for (a refusal thrown
 * before its first write, no failed statement) fails alone. On any other failure the group is
 * rolled back and each call runs again in a transaction of its own, so each gets the outcome it
 * would have had alone. A database out of reach fails the whole group. SQLite: inTransaction
 * (which groups every call).
 */
export function inSharedTransaction<T>(db: Db, apart: readonly string[], fn: (sql: Sql) => Promise<T>, wroteNothing: (err: unknown) => boolean = () => false): Promise<T> {
  if (dbClientOf(db) !== 'postgres') return inTransaction(db, fn);
  let group = postgresGroups.get(db);
  if (!group) postgresGroups.set(db, (group = new PostgresGroupCommit(db)));
  return group.run(fn, apart, wroteNothing);
}

interface SharedCall extends Pending {
  apart: readonly string[];
  wroteNothing(err: unknown): boolean;
}

/** How inSharedTransaction's calls ended, by count (the metrics' counter; all 0 on SQLite). */
export interface SharedTransactionStats {
  /** In a shared transaction that committed. */
  committed: number;
  /** In a group that failed, then again in a transaction of their own. */
  rerun: number;
  /** In a group that failed with the database out of reach. */
  unavailable: number;
  /** Alone in their group: in a transaction of their own. */
  alone: number;
}

export function sharedTransactionStats(db: Db): SharedTransactionStats {
  return { ...(postgresGroups.get(db)?.stats ?? { committed: 0, rerun: 0, unavailable: 0, alone: 0 }) };
}

/** inSharedTransaction's groups on one PostgreSQL pool. */
class PostgresGroupCommit {
  private readonly queue: SharedCall[] = [];
  /** The keys of the calls in running groups. */
  private readonly busy = new Set<string>();
  private running = 0;
  private scheduled = false;
  /** Half the pool: the other half stays free for everything else. */
  private readonly maxGroups: number;
  readonly stats: SharedTransactionStats = { committed: 0, rerun: 0, unavailable: 0, alone: 0 };

  constructor(private readonly db: Db) {
    this.maxGroups = Math.max(1, Math.floor(postgresPoolMax(db) / 2));
  }

  run<T>(fn: (sql: Sql) => Promise<T>, apart: readonly string[], wroteNothing: (err: unknown) => boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, apart, wroteNothing, resolve, reject });
      this.schedule();
    });
  }

  /** After this turn's I/O: requests read in the same turn join the group. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    while (this.running < this.maxGroups) {
      const group = this.take();
      if (!group.length) return;
      this.running++;
      void this.commit(group).finally(() => {
        this.running--;
        for (const call of group) for (const key of call.apart) this.busy.delete(key);
        if (this.queue.length) this.schedule();
      });
    }
  }

  /** The next group: queued calls in order, each whose keys are neither busy nor in the group already. */
  private take(): SharedCall[] {
    const group: SharedCall[] = [];
    for (let i = 0; i < this.queue.length && group.length < GROUP_COMMIT_MAX; ) {
      const call = this.queue[i]!;
      if (call.apart.some((key) => this.busy.has(key))) {
        i++;
        continue;
      }
      for (const key of call.apart) this.busy.add(key);
      group.push(call);
      this.queue.splice(i, 1);
    }
    return group;
  }

  private async commit(group: SharedCall[]): Promise<void> {
    if (group.length > 1) {
      try {
        // Started in the order of their keys, the calls take their locks in that order, as every
        // group does: groups of two instances seldom wait for each other in a cycle.
        const ordered = [...group].sort((a, b) => compareKeys(a.apart, b.apart));
        const outcomes = await inPipelinedTransaction(this.db, async (shared) => {
          const settled = await Promise.allSettled(ordered.map((call) => call.fn(shared)));
          const failures = settled.flatMap((s, i) => (s.status === 'rejected' && !ordered[i]!.wroteNothing(s.reason) ? [s.reason as unknown] : []));
          if (failures.length) throw new GroupFailed(failures);
          return settled;
        });
        ordered.forEach((call, i) => {
          const outcome = outcomes[i]!;
          if (outcome.status === 'fulfilled') call.resolve(outcome.value);
          else call.reject(outcome.reason);
        });
        this.stats.committed += group.length;
        return;
      } catch (err) {
        // Run again alone, each call would wait for the database once more.
        const unavailable = (err instanceof GroupFailed ? err.failures : [err]).find(isDatabaseUnavailable);
        if (unavailable) {
          for (const call of group) call.reject(unavailable);
          this.stats.unavailable += group.length;
          return;
        }
      }
    }
    this.stats[group.length > 1 ? 'rerun' : 'alone'] += group.length;
    await Promise.all(group.map((call) => inTransaction(this.db, call.fn).then((value) => call.resolve(value), (err: unknown) => call.reject(err))));
  }
}

const compareKeys = (a: readonly string[], b: readonly string[]) => {
  const [x = '', y = ''] = [a[0], b[0]];
  return x < y ? -1 : x > y ? 1 : 0;
};

/** A call of a shared transaction failed: the group is rolled back and each call runs alone. */
class GroupFailed extends Error {
  constructor(readonly failures: unknown[]) {
    super('a call of the shared transaction failed');
  }
}

const postgresGroups = new WeakMap<Db, PostgresGroupCommit>();

/** The result of each compiled query of a list. */
export type ResultsOf<Q extends readonly CompiledQuery[]> = { -readonly [K in keyof Q]: Q[K] extends CompiledQuery<infer R> ? QueryResult<R> : never };

/**
 * Runs the queries in order, each a statement of its own, and gives their results: on PostgreSQL
 * in one round trip (pipelined). Each statement sees what the ones before it did and waited for
 * (in READ COMMITTED it takes its snapshot when it starts). A failure of any fails the call: in
 * a transaction the ones after it do not run; outside one each is a transaction of its own.
 */
export async function inOneRoundTrip<Q extends readonly CompiledQuery[]>(db: Sql, queries: Q): Promise<ResultsOf<Q>> {
  if (dbClientOf(db) === 'postgres') return (await db.executeQuery(together(queries))).rows as ResultsOf<Q>;
  const results: QueryResult<unknown>[] = [];
  for (const q of queries) results.push(await db.executeQuery(q));
  return results as ResultsOf<Q>;
}

/**
 * inOneRoundTrip for statements that hold nothing after them (reads, advisory locks let go at
 * their statement's end, a single write that is its own transaction): on PostgreSQL the calls
 * made in one turn of the event loop go on one connection in one write (up to GROUP_COMMIT_MAX
 * calls a connection), one after another, outside any transaction, each statement a transaction
 * of its own and each call given its own statements' outcomes. Each call had taken a connection,
 * a write and a wakeup of the database of its own: under new pending claims, whose reconciles run
 * together once their group commit is done, those writes were 14% of the request thread. A call's
 * statements may wait behind an earlier call's (a lock it waits for). Reads planned once 'also
 * alone' that follow each other share one transaction (drivers.ts `planned`), so another call's
 * failure can be theirs: a call of such reads that failed runs again alone and gets the outcome
 * it would have had alone (running reads twice changes nothing). A connection that cannot be had
 * fails every call. In a transaction: inOneRoundTrip.
 */
export function inSharedRoundTrip<Q extends readonly CompiledQuery[]>(db: Db, queries: Q): Promise<ResultsOf<Q>> {
  if (dbClientOf(db) !== 'postgres' || db.isTransaction) return inOneRoundTrip(db, queries);
  let trips = sharedTrips.get(db);
  if (!trips) sharedTrips.set(db, (trips = new SharedRoundTrips(db)));
  return trips.run(queries) as Promise<ResultsOf<Q>>;
}

interface SharedTrip {
  queries: readonly CompiledQuery[];
  resolve: (results: QueryResult<unknown>[]) => void;
  reject: (err: unknown) => void;
}

/** inSharedRoundTrip's calls on one PostgreSQL pool. */
class SharedRoundTrips {
  private queue: SharedTrip[] = [];

  constructor(private readonly db: Db) {}

  run(queries: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]> {
    return new Promise((resolve, reject) => {
      // After this turn's I/O: calls made in the same turn join it.
      if (!this.queue.length) setImmediate(() => this.sendQueued());
      this.queue.push({ queries, resolve, reject });
    });
  }

  private sendQueued(): void {
    while (this.queue.length) void this.send(this.queue.splice(0, GROUP_COMMIT_MAX));
  }

  private async send(calls: SharedTrip[]): Promise<void> {
    let outcomes: StatementOutcome[];
    try {
      outcomes = (await this.db.executeQuery(settledTogether(calls.flatMap((c) => c.queries)))).rows;
    } catch (err) {
      for (const call of calls) call.reject(err);
      return;
    }
    let at = 0;
    const alone: SharedTrip[] = [];
    for (const call of calls) {
      const own = outcomes.slice(at, (at += call.queries.length));
      const failure = own.find((o) => !o.ok);
      if (!failure) call.resolve(own.map((o) => (o as { result: QueryResult<unknown> }).result));
      else if (calls.length > 1 && call.queries.some(isAlsoAlone) && !isDatabaseUnavailable(failure.error)) alone.push(call);
      else call.reject(failure.error);
    }
    await Promise.all(alone.map((call) => inOneRoundTrip(this.db, call.queries).then(call.resolve, call.reject)));
  }
}

const sharedTrips = new WeakMap<Db, SharedRoundTrips>();

/**
 * Runs a write whose outcome the caller does not wait for: in a PostgreSQL transaction it goes
 * out with the transaction's next statement or its COMMIT, and its failure fails that one (so the
 * unit of work). Use it for a transaction's last writes, whose errors the caller of
 * `inTransaction` handles; elsewhere it runs at once.
 */
export async function writeBehind(db: Sql, write: CompiledQuery): Promise<void> {
  await db.executeQuery(behind(write));
}

/** Calls per group: bounds how long the first of them waits for the others. */
const GROUP_COMMIT_MAX = 32;

interface Pending {
  fn: (sql: Sql) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

class SqliteGroupCommit {
  private readonly queue: Pending[] = [];
  private running = false;

  constructor(private readonly db: Db) {}

  run<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve, reject });
      if (this.running) return;
      this.running = true;
      // After this turn's I/O: requests read in the same turn join the group.
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        // The group is taken once the connection is ours: calls made meanwhile join it.
        let group: Pending[] = [];
        try {
          await this.db.connection().execute(async (conn) => {
            group = this.queue.splice(0, GROUP_COMMIT_MAX);
            await commitGroup(conn, group);
          });
        } catch (err) {
          for (const p of group.length ? group : this.queue.splice(0, GROUP_COMMIT_MAX)) p.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
}

// The group's own statements, compiled once: they run several times a group.
const BEGIN = CompiledQuery.raw('begin immediate');
const SAVEPOINT = CompiledQuery.raw('savepoint grouped');
const RELEASE = CompiledQuery.raw('release grouped');
const ROLLBACK_TO = CompiledQuery.raw('rollback to grouped');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/** One transaction for the group on the held connection; settles each call after the COMMIT. */
async function commitGroup(conn: Sql, group: Pending[]): Promise<void> {
  const outcomes: Outcome[] = [];
  const run = (statement: CompiledQuery) => conn.executeQuery(statement);
  try {
    await run(BEGIN);
    for (const p of group) {
      await run(SAVEPOINT);
      try {
        const value = await p.fn(conn);
        await run(RELEASE);
        outcomes.push({ ok: true, value });
      } catch (error) {
        // On some failures (a full disk, an I/O error) SQLite rolls the whole transaction back
        // itself: the savepoint is gone, and the group with it, for that failure's reason.
        if (!(await run(ROLLBACK_TO).then(() => true, () => false))) throw error;
        await run(RELEASE);
        outcomes.push({ ok: false, error });
      }
    }
    await run(COMMIT);
  } catch (err) {
    // After a failure the group is lost either way; a connection that cannot even roll back is
    // reported by the next statement.
    await run(ROLLBACK).catch(() => undefined);
    throw err;
  }
  group.forEach((p, i) => {
    const o = outcomes[i]!;
    if (o.ok) p.resolve(o.value);
    else p.reject(o.error);
  });
}

const sqliteGroups = new WeakMap<Db, SqliteGroupCommit>();

/**
 * How a read locks the rows it returns until its transaction ends, on PostgreSQL: `update`
 * (for a change) or `share` (they cannot change, and a read of a row another transaction is
 * changing waits for that change). SQLite has no row locks and needs none: it runs one writing
 * transaction at a time. Apply with `query.$call(lockRows(sql, 'update'))`.
 */
export function lockRows(db: Db, mode: 'update' | 'share') {
  return <Q extends { forUpdate(): Q; forShare(): Q }>(query: Q): Q => {
    if (dbClientOf(db) !== 'postgres') return query;
    return mode === 'update' ? query.forUpdate() : query.forShare();
  };
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
 * A's claims: twins/claim-order.ts). A position is still named by its row's `seq` (cursors and
 * keys do not change); a `seq` that names no row has no position.
 */
export interface CommitOrder {
  /** `order by` columns in the given direction. */
  orderBy(direction: 'asc' | 'desc'): RawBuilder<unknown>;
  /** Rows a reader may be given now (undefined: all it sees). */
  horizon?: Expression<SqlBool>;
  /** A row's position against the row whose `seq` is given. */
  relativeTo(op: '>' | '>=' | '<=', seq: number): Expression<SqlBool>;
  /**
   * Set when relativeTo places rows against a row that exists only (no row, no rows): a page
   * from a `seq` no row has is refused, lest a made-up cursor read as the end of the list.
   */
  anchoredTo?: 'kpt_claims';
}

export const SEQ_ORDER: CommitOrder = {
  orderBy: (direction) => sql`seq ${sql.raw(direction)}`,
  relativeTo: (op, seq) => sql<SqlBool>`seq ${sql.raw(op)} ${seq}`,
};

/**
 * The key of the advisory lock of the given name, within the current schema: advisory locks
 * are database-wide, and deployments (or test runs) in other schemas of the same database must
 * not wait for each other.
 */
export function lockKeyOf(name: string): RawBuilder<bigint> {
  return sql<bigint>`hashtextextended(current_schema() || ':' || ${name}, 0)`;
}

/**
 * Waits for, then holds until the transaction ends, the PostgreSQL advisory lock `name` (in this
 * schema): transactions taking the same name run that part one at a time. SQLite needs none: it
 * runs one writing transaction at a time.
 */
export function lockUntilCommit(sql: Sql, name: string): Promise<void> {
  return locksUntilCommit(sql, [{ name, mode: 'exclusive' }]);
}

/**
 * lockUntilCommit for several locks in one round trip, taken in the order given; a `shared` lock
 * waits only for transactions holding it exclusively (and for those waiting to).
 */
export async function locksUntilCommit(db: Sql, locks: AdvisoryLock[]): Promise<void> {
  if (dbClientOf(db) !== 'postgres') return;
  await db.executeQuery(advisoryLocks(db, locks));
}

/**
 * PostgreSQL: the statement taking the locks, in order, until its transaction ends (outside a
 * transaction, that is the statement's own: it waits for them and lets them go). Its text
 * depends only on the locks' modes (the names are values), so each sequence of modes is one
 * named statement: parsed once per connection, not on every run (0.05 ms of PostgreSQL's time
 * in each pending claim's reconcile).
 */
export function advisoryLocks(db: Sql, locks: AdvisoryLock[]): CompiledQuery {
  return named(sql`select ${advisoryLockCalls(locks)}`.compile(db), `hearth_locks_${locks.map((l) => (l.mode === 'shared' ? 's' : 'x')).join('')}`);
}

export interface AdvisoryLock {
  name: string;
  mode: 'exclusive' | 'shared';
}

/** PostgreSQL: select-list calls taking the locks until commit, in order. */
export function advisoryLockCalls(locks: AdvisoryLock[]): RawBuilder<unknown> {
  return sql.join(locks.map(({ name, mode }) => sql`${sql.raw(`pg_advisory_xact_lock${mode === 'shared' ? '_shared' : ''}`)}(${lockKeyOf(name)})`));
}
