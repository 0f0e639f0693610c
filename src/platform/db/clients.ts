// Knex's own better-sqlite3 and pg clients, each changed where the service needs it:
// - SQLite: a write lock held by another process is waited for without blocking the event loop
//   (better-sqlite3's busy timeout waits synchronously: the whole server would stop), and a
//   transaction takes the write lock when it begins, so waiting for it is the only wait.
// - PostgreSQL: a server found out of reach is not asked again for a moment (a circuit breaker),
//   so one database deadline holds a request, not each of its calls; a connection whose
//   client-side deadline fired is dropped, not pooled again.
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { setBounded } from '../bounded-map.ts';
import { BrokenCircuitError, ConsecutiveBreaker, circuitBreaker, handleWhen, IsolatedCircuitError, type CircuitBreakerPolicy } from 'cockatiel';

const require = createRequire(import.meta.url);

const code = (err: unknown) => (typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '');
const message = (err: unknown) => (typeof (err as { message?: unknown })?.message === 'string' ? (err as { message: string }).message : '');

/** What Hearth adds to a Knex configuration: the database deadline, in ms. */
export interface ClientSettings {
  hearthDeadlineMs: number;
}

interface KnexClientBase {
  config: ClientSettings;
  _query(connection: unknown, obj: { sql: string }): Promise<unknown>;
  acquireConnection(): Promise<unknown>;
  transaction(...args: unknown[]): unknown;
}
type KnexClientClass = new (config: object) => KnexClientBase;
type TransactionClass = new (...args: unknown[]) => {
  query(conn: unknown, sql: string): Promise<unknown>;
  rollback(conn: unknown, error: unknown): Promise<unknown>;
  _completed: boolean;
  _rejecter(error: unknown): void;
};

// Knex's dialect classes are not part of its typed API; they are what `client: 'better-sqlite3'` and `client: 'pg'` load.
const BetterSqlite3Client = require('knex/lib/dialects/better-sqlite3/index.js') as KnexClientClass;
const SqliteTransaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as TransactionClass;
const PostgresClient = require('knex/lib/dialects/postgres/index.js') as KnexClientClass;

interface SqliteConnection {
  readonly inTransaction: boolean;
  prepare(sql: string): unknown;
  exec(sql: string): unknown;
  pragma(source: string): unknown;
  close(): void;
}

/** How many prepared statements a SQLite connection keeps (its queries' distinct texts). */
const STATEMENTS_KEPT = 500;

/**
 * Knex prepares every statement it runs afresh; SQLite's parse and plan then cost as much as
 * running it. The connection keeps its prepared statements by text (the least recently used
 * dropped past STATEMENTS_KEPT); Knex runs each one to its end, so one is never in use twice.
 */
function keepPreparedStatements(conn: SqliteConnection): void {
  const prepare = conn.prepare.bind(conn);
  const kept = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    const statement = kept.get(sql) ?? prepare(sql);
    setBounded(kept, sql, statement, STATEMENTS_KEPT);
    return statement;
  };
}

/** A transaction that takes SQLite's write lock when it begins: a later statement then never waits for another process. */
class ImmediateTransaction extends SqliteTransaction {
  begin(conn: unknown) {
    return this.query(conn, 'BEGIN IMMEDIATE;');
  }

  /**
   * SQLite rolls a transaction back itself on some failures (a full disk, an I/O error): a
   * ROLLBACK would then fail, and its error would hide the failure's own reason from the caller.
   */
  override rollback(conn: SqliteConnection, error: unknown) {
    if (conn.inTransaction) return super.rollback(conn, error);
    this._completed = true;
    this._rejecter(error);
    return Promise.resolve();
  }
}

const isBusy = (err: unknown) => code(err).startsWith('SQLITE_BUSY');
/** The first wait for the write lock, doubled each time up to BUSY_WAIT_MAX_MS. */
const BUSY_WAIT_MS = 2;
const BUSY_WAIT_MAX_MS = 50;

export class HearthSqliteClient extends BetterSqlite3Client {
  async acquireRawConnection(): Promise<SqliteConnection> {
    const Database = require('better-sqlite3') as new (file: string, options: { timeout: number }) => SqliteConnection;
    const { filename } = (this as unknown as { connectionSettings: { filename: string } }).connectionSettings;
    // No busy timeout: better-sqlite3 would wait for the lock synchronously (see _query).
    const conn = new Database(filename, { timeout: 0 });
    try {
      // WAL lets readers run beside the writer; synchronous NORMAL leaves the log's fsync to
      // checkpoints; foreign keys are off by default in SQLite.
      conn.pragma('journal_mode = WAL');
      conn.pragma('synchronous = NORMAL');
      conn.pragma('foreign_keys = ON');
      keepPreparedStatements(conn);
      return conn;
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  override transaction(...args: unknown[]) {
    return new ImmediateTransaction(this, ...args);
  }

  /**
   * Runs the statement; while another process holds the write lock, tries again after a pause
   * (the event loop serves other requests meanwhile) until the database deadline. Only a
   * statement that can simply be sent again is: one outside a transaction, or the BEGIN
   * IMMEDIATE of one (inside a transaction begun IMMEDIATE nothing waits for the lock).
   */
  override async _query(connection: SqliteConnection, obj: { sql: string }): Promise<unknown> {
    const deadline = Date.now() + this.config.hearthDeadlineMs;
    for (let wait = BUSY_WAIT_MS; ; wait = Math.min(wait * 2, BUSY_WAIT_MAX_MS)) {
      const retryable = !connection.inTransaction || obj.sql.startsWith('BEGIN');
      try {
        return await super._query(connection, obj);
      } catch (err) {
        // A COMMIT refused by a constraint checked at commit (a deferred foreign key) leaves the
        // transaction open, and Knex would give the connection back inside it: the next
        // caller's statements would run in it, seeing and committing what was refused.
        if (obj.sql.startsWith('COMMIT') && connection.inTransaction) connection.exec('ROLLBACK');
        if (!isBusy(err) || !retryable || Date.now() + wait > deadline) throw err;
        await sleep(wait);
      }
    }
  }
}

/** Socket errors of a connection that could not be made or was lost (isDatabaseUnavailable counts them too). */
export const SOCKET_FAILURES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** pg's messages for a connection lost (also one its connect timeout ended: "Connection terminated due to connection timeout"). */
export const CONNECTION_LOST = /Connection terminated|Connection ended unexpectedly/;
/** pg's message when a connection's `connectionTimeoutMillis` passed. */
export const CONNECT_TIMEOUT = 'timeout expired';
/** The message of pg's client-side `query_timeout` error. */
export const PG_READ_TIMEOUT = 'Query read timeout';
/** How long every call fails at once after the server was found out of reach, before one tries it again. */
export const OUT_OF_REACH_PAUSE_MS = 1000;


/**
 * Connecting: a connection refused, lost or not made in time, the server shutting down (08,
 * 57P01-57P03). A server that answered, even with an error (too many connections, a refused
 * login), was reached; so was the pool when its connections were only all busy.
 */
const connectingOutOfReach = (err: unknown) =>
  SOCKET_FAILURES.has(code(err)) || /^(08...|57P0[1-3])$/.test(code(err)) || CONNECTION_LOST.test(message(err)) || message(err).includes(CONNECT_TIMEOUT);

/**
 * Over a connection: no answer within the deadline, or a network that no longer carries it. A
 * connection lost while in use is not enough (a backend terminated by an administrator, a proxy
 * or an idle cut on a healthy server): its call fails, and the next one connects again.
 */
const queryOutOfReach = (err: unknown) => message(err).endsWith(PG_READ_TIMEOUT) || /^(ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)$/.test(code(err));

interface PgConnection {
  __knex__disposed?: unknown;
}

/** Set on an error that said the server is out of reach (connectingOutOfReach, queryOutOfReach). */
const OUT_OF_REACH = Symbol('out of reach');

/** Rethrows err, marked when `says` holds: the breaker counts marked errors only. */
function rethrow(err: unknown, says: (err: unknown) => boolean): never {
  if (says(err) && typeof err === 'object' && err !== null) Object.defineProperty(err, OUT_OF_REACH, { value: true });
  throw err;
}

/**
 * What a database last learnt of its server's reach, by its Knex configuration (which a
 * transaction's client shares with the pool's). Opens at the first out-of-reach failure; after
 * the pause one call tries the server again (the others still fail at once) and its answer
 * closes it.
 */
const reaches = new WeakMap<object, CircuitBreakerPolicy>();
function reachOf(config: object): CircuitBreakerPolicy {
  let reach = reaches.get(config);
  if (!reach) {
    reach = circuitBreaker(handleWhen((err) => (err as { [OUT_OF_REACH]?: boolean })[OUT_OF_REACH] === true), {
      halfOpenAfter: OUT_OF_REACH_PAUSE_MS,
      breaker: new ConsecutiveBreaker(1),
    });
    reaches.set(config, reach);
  }
  return reach;
}

export class HearthPostgresClient extends PostgresClient {
  override acquireConnection(): Promise<unknown> {
    return reachOf(this.config).execute(() => super.acquireConnection().catch((err: unknown) => rethrow(err, connectingOutOfReach)));
  }

  override async _query(connection: PgConnection, obj: { sql: string }): Promise<unknown> {
    try {
      return await reachOf(this.config).execute(() => super._query(connection, obj).catch((err: unknown) => rethrow(err, queryOutOfReach)));
    } catch (err) {
      // The server may still answer this statement later: the connection is not used again.
      if (queryOutOfReach(err)) connection.__knex__disposed = err;
      throw err;
    }
  }
}

/** The errors a call gets while the server is known out of reach. */
export const OUT_OF_REACH_ERRORS = [BrokenCircuitError, IsolatedCircuitError];
