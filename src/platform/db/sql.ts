// Parameterised SQL for the request paths `make bench` measures, run without Knex's query
// builder, compiler and runner: on this machine those cost 30-60 µs a statement, more than
// SQLite takes to run it. The same SQL text runs on both databases: `?` placeholders (Knex
// numbers them for PostgreSQL), and only syntax both accept.
import type { Knex } from 'knex';
import { setBounded } from '../bounded-map.ts';
import { dbClientOf, type Db, type DbClient } from './index.ts';

export type Binding = string | number | boolean | null;

/** The largest `seq` (Knex `increments`: a 32-bit integer on PostgreSQL); a larger one must not reach a query. */
export const MAX_SEQ = 2 ** 31 - 1;

export interface Sql {
  readonly dialect: DbClient;
  /** The first row, or undefined. */
  one<T>(sql: string, bindings?: readonly Binding[]): Promise<T | undefined>;
  all<T>(sql: string, bindings?: readonly Binding[]): Promise<T[]>;
  /** Runs a write; the number of rows it changed. */
  run(sql: string, bindings?: readonly Binding[]): Promise<number>;
}

interface SqliteStatement {
  reader: boolean;
  all(bindings: unknown[]): unknown[];
  run(bindings: unknown[]): { changes: number };
}
interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  /** False once SQLite has ended a transaction itself (after some errors). */
  inTransaction: boolean;
}

/** better-sqlite3 binds no booleans (Knex converts them the same way). */
const sqliteBindings = (bindings: readonly Binding[]) => bindings.map((b) => (typeof b === 'boolean' ? Number(b) : b));

/** Runs a statement on a connection: from the pool for just that statement, or one held. */
type OnConnection<C> = <R>(run: (conn: C) => R | Promise<R>) => Promise<R>;

/**
 * SQLite: each statement runs on the connection Knex's pool holds, taken from the pool for that
 * statement (or the transaction's own connection), so it never runs inside another request's
 * open transaction. Statements are prepared once (see createDb).
 */
class SqliteSql implements Sql {
  readonly dialect = 'sqlite';

  constructor(private readonly onConnection: OnConnection<SqliteConnection>) {}

  private exec(sql: string, bindings: readonly Binding[]): Promise<unknown[] | number> {
    return this.onConnection((conn) => {
      const statement = conn.prepare(sql);
      return statement.reader ? statement.all(sqliteBindings(bindings)) : statement.run(sqliteBindings(bindings)).changes;
    });
  }

  async one<T>(sql: string, bindings: readonly Binding[] = []): Promise<T | undefined> {
    return ((await this.exec(sql, bindings)) as T[])[0];
  }

  async all<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    return (await this.exec(sql, bindings)) as T[];
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    return (await this.exec(sql, bindings)) as number;
  }
}

const pooled = <C>(client: Knex.Client): OnConnection<C> => async (run) => {
  const conn = (await client.acquireConnection()) as C;
  try {
    return await run(conn);
  } finally {
    await client.releaseConnection(conn);
  }
};

/** Over a Knex transaction another module opened (entities, collections). */
class PostgresSql implements Sql {
  readonly dialect = 'postgres';

  constructor(private readonly db: Knex.Transaction) {}

  async one<T>(sql: string, bindings: readonly Binding[] = []): Promise<T | undefined> {
    return (await this.all<T>(sql, bindings))[0];
  }

  async all<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    return (await this.db.raw<{ rows: T[] }>(sql, bindings as Binding[])).rows;
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    return (await this.db.raw<{ rowCount: number }>(sql, bindings as Binding[])).rowCount;
  }
}

interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

/** Knex's PostgreSQL client (index.ts's DeadlinePostgres): its pool, and its statement call with the deadline. */
interface PgClient extends Knex.Client {
  _query(connection: unknown, obj: { sql: string; bindings: readonly Binding[] }): Promise<{ response: PgResult }>;
  positionBindings(sql: string): string;
}

/** SQL text with `?` numbered as PostgreSQL wants (`$1`...), once per text. */
const numbered = new Map<string, string>();
const NUMBERED_MAX = 500;

/**
 * PostgreSQL without Knex's runner: each statement goes to the driver through the client's own
 * `_query` (the deadline of index.ts applies) on a pooled connection, or on the one a transaction
 * holds. In a CPU profile under make bench (claims), Knex's raw runner and transaction objects
 * around the driver were several per cent of the node process's time.
 */
class PgSql implements Sql {
  readonly dialect = 'postgres';

  constructor(
    private readonly client: PgClient,
    private readonly onConnection: OnConnection<unknown>,
  ) {}

  private exec(sql: string, bindings: readonly Binding[]): Promise<PgResult> {
    let text = numbered.get(sql);
    if (text === undefined) {
      text = this.client.positionBindings(sql);
      setBounded(numbered, sql, text, NUMBERED_MAX);
    }
    const obj = { sql: text, bindings };
    return this.onConnection(async (conn) => (await this.client._query(conn, obj)).response);
  }

  async one<T>(sql: string, bindings: readonly Binding[] = []): Promise<T | undefined> {
    return (await this.exec(sql, bindings)).rows[0] as T | undefined;
  }

  async all<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    return (await this.exec(sql, bindings)).rows as T[];
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    return (await this.exec(sql, bindings)).rowCount ?? 0;
  }
}

/** The SQL runner over a database or a Knex transaction. */
export function sqlOf(db: Db | Knex.Transaction): Sql {
  if (dbClientOf(db as Db) !== 'postgres') return new SqliteSql(pooled<SqliteConnection>(db.client as Knex.Client));
  if ((db as Knex.Transaction).isTransaction) return new PostgresSql(db as Knex.Transaction);
  return new PgSql(db.client as PgClient, pooled<unknown>(db.client as PgClient));
}

/** BEGIN..COMMIT on one pooled connection; ROLLBACK when fn throws (a connection that cannot is dropped by the pool). */
async function pgTransaction<T>(db: Db, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const client = db.client as PgClient;
  const conn: unknown = await client.acquireConnection();
  try {
    const sql = new PgSql(client, async (run) => run(conn));
    await sql.run('begin');
    let result: T;
    try {
      result = await fn(sql);
    } catch (err) {
      await sql.run('rollback').catch(() => undefined);
      throw err;
    }
    await sql.run('commit');
    return result;
  } finally {
    await client.releaseConnection(conn);
  }
}

/**
 * Runs fn in one transaction: its writes are committed when it resolves and undone when it
 * throws. On PostgreSQL it is one connection's BEGIN..COMMIT (pgTransaction). On SQLite, which
 * has one writer, the calls made in one turn of the event loop are committed together (group
 * commit): each runs alone, in
 * order, in a savepoint of one BEGIN IMMEDIATE..COMMIT on the held connection, and each settles
 * only after that COMMIT, so a caller never answers for writes that are not committed. A failed
 * COMMIT fails every call of its group. Measured on claim submission under load: a transaction
 * each without Knex's objects (about 150 µs of JS each here) took 1,540 -> 1,005 µs of CPU a
 * claim; grouping, whose calls share log writes, took 13-18% more off that.
 */
export function inTransaction<T>(db: Db, fn: (sql: Sql) => Promise<T>): Promise<T> {
  if (dbClientOf(db) === 'postgres') return pgTransaction(db, fn);
  let group = sqliteGroups.get(db);
  if (!group) sqliteGroups.set(db, (group = new SqliteGroupCommit(db.client as Knex.Client)));
  return group.run(fn);
}

/** Calls per group: bounds how long the first of them waits for the others. */
const GROUP_COMMIT_MAX = 32;

interface Pending {
  fn: (sql: Sql) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

class SqliteGroupCommit {
  private readonly queue: Pending[] = [];
  private running = false;

  constructor(private readonly client: Knex.Client) {}

  run<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve, reject });
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
        let conn: SqliteConnection;
        try {
          conn = (await this.client.acquireConnection()) as SqliteConnection;
        } catch (err) {
          for (const p of this.queue.splice(0, GROUP_COMMIT_MAX)) p.reject(err);
          continue;
        }
        await this.commitGroup(conn, this.queue.splice(0, GROUP_COMMIT_MAX));
      }
    } finally {
      this.running = false;
    }
  }

  /** One transaction for the group; the connection goes back to the pool after it. */
  private async commitGroup(conn: SqliteConnection, group: Pending[]): Promise<void> {
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      conn.prepare('begin immediate').run([]);
      const sql = new SqliteSql(async (run) => run(conn));
      for (const p of group) {
        conn.prepare('savepoint grouped').run([]);
        try {
          const value = await p.fn(sql);
          conn.prepare('release grouped').run([]);
          outcomes.push({ ok: true, value });
        } catch (error) {
          conn.prepare('rollback to grouped').run([]);
          conn.prepare('release grouped').run([]);
          outcomes.push({ ok: false, error });
        }
      }
      conn.prepare('commit').run([]);
    } catch (err) {
      rollbackQuietly(conn);
      for (const p of group) p.reject(err);
      return;
    } finally {
      await this.client.releaseConnection(conn);
    }
    group.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value);
      else p.reject(o.error);
    });
  }
}

const sqliteGroups = new WeakMap<Db, SqliteGroupCommit>();

/** After a failure the group is lost either way; a connection that cannot even roll back is reported by the next statement. */
function rollbackQuietly(conn: SqliteConnection): void {
  try {
    if (conn.inTransaction) conn.prepare('rollback').run([]);
  } catch {
    // nothing more to undo here
  }
}

/**
 * ` for update` on PostgreSQL, locking the rows a read returns until its transaction ends.
 * SQLite has no row locks and needs none: it runs one writing transaction at a time.
 */
export const forUpdate = (sql: Sql) => (sql.dialect === 'postgres' ? ' for update' : '');

/**
 * ` for share` on PostgreSQL: the rows a read returns cannot change until its transaction ends,
 * and a read of a row another transaction is changing waits for that change (SQLite: as above).
 */
export const forShare = (sql: Sql) => (sql.dialect === 'postgres' ? ' for share' : '');

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
 * fragments over the table's columns (unqualified). SEQ_ORDER is that order wherever `seq` is
 * commit order (takeSeqTurn, or SQLite's one writer); an area whose inserts take no turn gives
 * its own (area A's claims: twins/claim-order.ts). A position is still named by its row's `seq`
 * (cursors and keys do not change); a `seq` that names no row has no position.
 */
export interface CommitOrder {
  /** `order by` columns in the given direction. */
  orderBy(direction: 'asc' | 'desc'): string;
  /** Rows a reader may be given now (undefined: all it sees). */
  horizon?: string;
  /** A row's position against the row whose `seq` is the one binding. */
  relativeTo(op: '>' | '>=' | '<='): string;
}

export const SEQ_ORDER: CommitOrder = {
  orderBy: (direction) => `seq ${direction}`,
  relativeTo: (op) => `seq ${op} ?`,
};

/**
 * The key of the advisory lock named by the bound text, within the current schema: advisory
 * locks are database-wide, and deployments (or test runs) in other schemas of the same database
 * must not wait for each other.
 */
export const schemaScopedLockKey = lockKeyOf('?');

/** The key schemaScopedLockKey computes, for a name given as SQL (a literal, or `?`). */
export function lockKeyOf(nameSql: string): string {
  return `hashtextextended(current_schema() || ':' || ${nameSql}, 0)`;
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
export async function locksUntilCommit(sql: Sql, locks: AdvisoryLock[]): Promise<void> {
  if (sql.dialect !== 'postgres') return;
  await sql.one(`select ${advisoryLockCalls(locks)}`, locks.map(({ name }) => name));
}

export interface AdvisoryLock {
  name: string;
  mode: 'exclusive' | 'shared';
}

/** PostgreSQL: select-list calls taking the locks until commit, in order; bind their names. */
export function advisoryLockCalls(locks: AdvisoryLock[]): string {
  return locks.map(({ mode }) => `pg_advisory_xact_lock${mode === 'shared' ? '_shared' : ''}(${schemaScopedLockKey})`).join(', ');
}

type Row = Record<string, Binding | undefined>;
const quoted = (column: string) => `"${column}"`;
/** Columns set in a row object (undefined ones are left out, as Knex does). */
const defined = (row: Row) => Object.entries(row).filter(([, v]) => v !== undefined) as [string, Binding][];

/** `insert into table (...) values (...)` for one row whose keys are the table's column names. */
export function insertInto(table: string, row: Row): [string, Binding[]] {
  const cols = defined(row);
  return [`insert into ${table} (${cols.map(([c]) => quoted(c)).join(', ')}) values (${cols.map(() => '?').join(', ')})`, cols.map(([, v]) => v)];
}

/** `update table set ... where a = ? and b = ?` from a patch and equality conditions. */
export function updateWhere(table: string, patch: Row, where: Row): [string, Binding[]] {
  const set = defined(patch);
  const conds = defined(where);
  return [
    `update ${table} set ${set.map(([c]) => `${quoted(c)} = ?`).join(', ')} where ${conds.map(([c]) => `${quoted(c)} = ?`).join(' and ')}`,
    [...set.map(([, v]) => v), ...conds.map(([, v]) => v)],
  ];
}
