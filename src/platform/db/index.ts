// Knex on SQLite (embedded default, a file under DATA_DIR) or PostgreSQL (DATABASE_URL).
// Repositories are the only code that builds SQL, and the same code runs on both. An error's
// message carries its SQL with `?` placeholders, never the bound values (compileSqlOnError):
// those are phone numbers, names, sealed PINs and key hashes, and errors are logged. (The row
// values PostgreSQL puts in an error's `detail` are redacted by the logger.)
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import knex, { type Knex } from 'knex';
import type { Config } from '../../config.ts';
import { setBounded } from '../bounded-map.ts';
import { FOREGROUND_CHECKPOINT_PAGES, startCheckpointer } from './checkpointer.ts';
import { migrationSource } from './migrations/index.ts';

export type Db = Knex;
export type DbClient = 'sqlite' | 'postgres';

export interface DbOptions {
  url?: string;
  dataDir: string;
  poolMax: number;
  /** PostgreSQL schema to use (tests get one each). */
  schema?: string;
  /** The database deadline (DB_QUERY_TIMEOUT_MS): per statement, per wait for a connection. */
  queryTimeoutMs?: number;
}

export const DEFAULT_QUERY_TIMEOUT_MS = 3000;

/** Knex's own PostgreSQL dialect, which the deadline dialect below extends. */
const KnexPostgres = createRequire(import.meta.url)('knex/lib/dialects/postgres/index.js') as new (config: Knex.Config) => Knex.Client;

interface PgConnection {
  __knex__disposed?: unknown;
  connection?: { stream?: { destroy(): void } };
}

/**
 * PostgreSQL with a client-side deadline. `statement_timeout` makes a server that answers cancel
 * a slow statement; a server that does not answer (frozen, cut off) is caught by pg's
 * `query_timeout`, which only rejects the caller: the statement may still run, so the connection
 * would carry it (or its half-done transaction) to the next request. Such a connection is
 * closed and marked for Knex's pool to drop.
 */
class DeadlinePostgres extends KnexPostgres {
  async _query(connection: PgConnection, obj: unknown): Promise<unknown> {
    try {
      return await (KnexPostgres.prototype as unknown as { _query(c: PgConnection, o: unknown): Promise<unknown> })._query.call(this, connection, obj);
    } catch (err) {
      if ((err as Error)?.message?.endsWith(PG_READ_TIMEOUT)) {
        connection.__knex__disposed = err;
        connection.connection?.stream?.destroy();
      }
      throw err;
    }
  }
}

/** The message of pg's client-side `query_timeout` error. */
const PG_READ_TIMEOUT = 'Query read timeout';

export function dbClientOf(db: Db): DbClient {
  return (db.client as { dialect?: string }).dialect === 'postgresql' ? 'postgres' : 'sqlite';
}

export function sqliteFile(url: string | undefined, dataDir: string): string {
  if (url?.startsWith('sqlite:')) return url.slice('sqlite:'.length).replace(/^\/\//, '');
  return join(dataDir, 'hearth.sqlite');
}

/**
 * Knex prints a failed connection attempt (and a connection dropped after a failure) before
 * rejecting with the same error, which its callers report (the CLI in one line, requests as a
 * logged 500 or 503): only those prints are dropped.
 */
const knexLog = {
  warn(message: unknown) {
    if (!/^(Acquire connection error|Connection Error)/.test(String(message))) console.warn(message);
  },
};

export function createDb(opts: DbOptions): Db {
  const deadline = opts.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  if (opts.url && /^postgres(ql)?:\/\//.test(opts.url)) {
    return knex({
      client: DeadlinePostgres as unknown as typeof Knex.Client,
      log: knexLog,
      compileSqlOnError: false,
      connection: {
        connectionString: opts.url,
        connectionTimeoutMillis: deadline,
        statement_timeout: deadline,
        // A little later than the server's own cancel, which leaves the connection usable.
        query_timeout: deadline + 500,
        // A transaction left open by a caller that died must not hold its locks forever.
        idle_in_transaction_session_timeout: Math.max(deadline * 2, 10_000),
        keepAlive: true,
      } as Knex.PgConnectionConfig,
      searchPath: opts.schema ? [opts.schema] : undefined,
      pool: { min: 0, max: opts.poolMax, acquireTimeoutMillis: deadline },
      acquireConnectionTimeout: deadline,
    });
  }
  const file = sqliteFile(opts.url, opts.dataDir);
  if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  return knex({
    client: 'better-sqlite3',
    compileSqlOnError: false,
    connection: { filename: file },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      // WAL lets readers run beside the writer; synchronous NORMAL leaves the log's fsync to
      // checkpoints, where FULL would add one to every commit on the event loop (USSD keypresses
      // under make bench fell from ~3,200 to ~2,000 a second with it). It is the driver's WAL
      // default too, but only from a connection's first transaction on: stated here, it holds
      // from the first statement. busy_timeout makes a second process wait for the write lock
      // (up to the deadline) instead of failing at once; foreign keys are off by default in SQLite; checkpoints run
      // in a worker thread (see checkpointer.ts).
      afterCreate: (conn: BetterSqlite3.Database, done: (err: Error | null, conn: unknown) => void) => {
        try {
          conn.pragma('journal_mode = WAL');
          conn.pragma('synchronous = NORMAL');
          conn.pragma(`busy_timeout = ${deadline}`);
          conn.pragma('foreign_keys = ON');
          cachePreparedStatements(conn);
          if (file !== ':memory:') checkpointInBackground(conn, file);
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
}

/** Hands checkpoints to a worker for as long as the connection is open. */
function checkpointInBackground(conn: { pragma(p: string): unknown; close(): unknown }, file: string): void {
  conn.pragma(`wal_autocheckpoint = ${FOREGROUND_CHECKPOINT_PAGES}`);
  const checkpointer = startCheckpointer(file);
  const close = conn.close.bind(conn);
  conn.close = () => {
    checkpointer.stop();
    return close();
  };
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Knex prepares every SQLite statement anew, which costs more than running most of our queries.
 * better-sqlite3 statements are reusable (execution is synchronous, so never interleaved), and
 * SQLite re-prepares them itself after a schema change; a bounded cache keyed by SQL text makes
 * repeated queries skip the parse. Knex sets no per-statement state we use (safeIntegers).
 */
function cachePreparedStatements(conn: { prepare(sql: string): unknown }): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let statement = cache.get(sql);
    if (!statement) {
      statement = prepare(sql);
      setBounded(cache, sql, statement, STATEMENT_CACHE_SIZE);
    }
    return statement;
  };
}

export function createDbFromConfig(config: Config): Db {
  return createDb({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: config.DB_POOL_MAX, queryTimeoutMs: config.DB_QUERY_TIMEOUT_MS });
}

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [unknown, string[]];
  return applied;
}

/** A real round trip to the database, bounded by a timeout: the health check's source of truth. */
export async function pingDb(db: Db, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((res) => {
    timer = setTimeout(() => res(false), timeoutMs);
  });
  try {
    return await Promise.race([db.raw('select 1 as ok').then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when err is a unique-constraint violation on either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A one-line explanation of a failure to reach the database at all, for the command line; undefined for any other error. */
export function databaseUnreachable(err: unknown): string | undefined {
  const e = err as { code?: string; message?: string };
  // 3D000: invalid_catalog_name (the database does not exist); 28000/28P01: authentication.
  if (e?.code === '3D000') return `The database does not exist: ${e.message}. Create it (createdb) or fix DATABASE_URL.`;
  if (e?.code === '28000' || e?.code === '28P01') return `The database refused the login: ${e.message}. Check DATABASE_URL.`;
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ENOTFOUND' || e?.code === 'ETIMEDOUT') return `Cannot reach the database (${e.code}): ${e.message}. Check DATABASE_URL and that PostgreSQL runs.`;
  return undefined;
}

// PostgreSQL SQLSTATE classes and codes meaning "the database cannot serve now", not "this
// request is wrong": 08 connection exception, 53 insufficient resources, 57014 statement
// cancelled (the deadline), 57P01-57P05 shutdown/crash/cannot connect now/idle timeouts.
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57014|57P0[1-5])$/;
const UNAVAILABLE_SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGE = /(Query read timeout|timeout expired|Connection terminated|Connection ended unexpectedly|Client has encountered a connection error|timeout exceeded when trying to connect)/;

/**
 * True when `err` says the database is out of reach or past its deadline (a 503 worth retrying),
 * on either database: PostgreSQL down, frozen or refusing connections, the pool exhausted past
 * the deadline, SQLite's write lock held past it.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (!e || typeof e !== 'object') return false;
  if (e.name === 'KnexTimeoutError') return true;
  if (typeof e.code === 'string' && (UNAVAILABLE_SQLSTATE.test(e.code) || UNAVAILABLE_SOCKET.has(e.code) || e.code.startsWith('SQLITE_BUSY'))) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== err && isDatabaseUnavailable(e.cause);
}
