// Knex on SQLite (embedded default, a file under DATA_DIR, through better-sqlite3) or PostgreSQL
// (DATABASE_URL, through pg). Repositories are the only code that builds SQL, with Knex's builder
// over the table types generated from the migrated schema (generated/db), and the same code runs
// on both databases. Errors carry no bound values (compileSqlOnError: false): those are phone
// numbers, names, sealed PINs and key hashes, and errors are logged. (The row values PostgreSQL
// puts in an error's `detail` are redacted by the logger.)
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import knex, { type Knex } from 'knex';
import { invalidConfig, type Config } from '../../config.ts';
import { onPostgres } from './dialect.ts';
import { CONNECT_TIMEOUT, CONNECTION_LOST, HearthPostgresClient, HearthSqliteClient, OUT_OF_REACH_ERRORS, PG_READ_TIMEOUT, SOCKET_FAILURES, type ClientSettings } from './clients.ts';

/** The database: its pool, or (inside inTransaction) one transaction's connection. */
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

/** Which database a handle (the pool, a transaction, a migration's) runs on. */
export function dbClientOf(db: Knex): DbClient {
  return onPostgres(db) ? 'postgres' : 'sqlite';
}

export function sqliteFile(url: string | undefined, dataDir: string): string {
  if (url?.startsWith('sqlite:')) return url.slice('sqlite:'.length).replace(/^\/\//, '');
  return join(dataDir, 'hearth.sqlite');
}

/** Statements sent, per database: the metrics' counter. */
const statementsSent = new WeakMap<Knex, { count: number }>();

/** Knex errors log to the console by default; a failure reaches its caller, who reports it. */
const quiet = { warn: () => undefined, error: () => undefined, deprecate: () => undefined, debug: () => undefined };

/** The Knex configuration a database is opened with (the app, the knexfile and the migrations use it). */
export function knexConfig(opts: DbOptions): Knex.Config & ClientSettings {
  const deadline = opts.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  const common = { compileSqlOnError: false, log: quiet, acquireConnectionTimeout: deadline, hearthDeadlineMs: deadline };
  if (opts.url && /^postgres(ql)?:\/\//.test(opts.url)) {
    return {
      ...common,
      client: HearthPostgresClient as unknown as typeof Knex.Client,
      connection: {
        connectionString: opts.url,
        connectionTimeoutMillis: deadline,
        // A client-side deadline besides the server's: `statement_timeout` makes a server that
        // answers cancel a slow statement; one that does not answer (frozen, cut off) is caught
        // by pg's `query_timeout`, a little later than the server's own cancel.
        statement_timeout: deadline,
        query_timeout: deadline + 500,
        // A transaction left open by a caller that died must not hold its locks forever.
        idle_in_transaction_session_timeout: Math.max(deadline * 2, 10_000),
        keepAlive: true,
        ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
      },
      pool: { min: 0, max: opts.poolMax },
    };
  }
  const file = sqliteFile(opts.url, opts.dataDir);
  return {
    ...common,
    client: HearthSqliteClient as unknown as typeof Knex.Client,
    connection: { filename: file },
    useNullAsDefault: true,
    // One connection: SQLite has one writer, and a transaction holds the connection until it ends,
    // so no statement ever runs inside another caller's open transaction.
    pool: { min: 1, max: 1 },
  };
}

/** SQLite: makes the folder the configuration's file goes in (a new DATA_DIR). */
export function makeSqliteFolder(config: Knex.Config): void {
  const file = (config.connection as { filename?: string }).filename;
  if (file !== undefined && file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
}

export function createDb(opts: DbOptions): Db {
  const config = knexConfig(opts);
  makeSqliteFolder(config);
  const db = knex(config);
  const sent = { count: 0 };
  db.on('query', () => sent.count++);
  statementsSent.set(db, sent);
  return db;
}

/** The database's connections by state, and the statements sent so far (the metrics). */
export interface PoolStats {
  used: number;
  free: number;
  pending: number;
  roundTrips: number;
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

export function poolStats(db: Db): PoolStats {
  const pool = (db.client as { pool?: TarnPool }).pool;
  return {
    used: pool?.numUsed() ?? 0,
    free: pool?.numFree() ?? 0,
    pending: pool?.numPendingAcquires() ?? 0,
    roundTrips: statementsSent.get(db)?.count ?? 0,
  };
}

/** What the configuration says of the database. */
export const dbOptionsOf = (config: Config): DbOptions => ({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: config.DB_POOL_MAX, queryTimeoutMs: config.DB_QUERY_TIMEOUT_MS });

/** The database the configuration names. A folder that cannot hold the SQLite file is a ConfigError naming the variable that put it there. */
export function createDbFromConfig(config: Config): Db {
  try {
    return createDb(dbOptionsOf(config));
  } catch (err) {
    const { code, path } = err as NodeJS.ErrnoException;
    if (!code || !path) throw err;
    throw invalidConfig(config.DATABASE_URL ? 'DATABASE_URL' : 'DATA_DIR', `cannot hold the SQLite database: ${code} at ${path}`);
  }
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
  if (typeof e?.code === 'string' && (SQLITE_STORAGE.test(e.code) || /^SQLITE_(NOTADB|CORRUPT)/.test(e.code))) {
    return `Cannot open or write the SQLite database (${e.code}): ${e.message}. Check that DATA_DIR (or the file DATABASE_URL names) is a folder and a Hearth database file this user may write, on a disk with room.`;
  }
  return undefined;
}

// PostgreSQL SQLSTATE classes and codes meaning "the database cannot serve now", not "this
// request is wrong": 08 connection exception, 53 insufficient resources, 57014 statement
// cancelled (the deadline), 57P01-57P05 shutdown/crash/cannot connect now/idle timeouts, 55000
// connections not allowed (ALLOW_CONNECTIONS false), 3D000 the database gone, 28000/28P01 the
// login refused (a rotated password), 25006 read-only (a standby after a failover).
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57014|57P0[1-5]|55000|3D000|28000|28P01|25006)$/;
// SQLite's storage failing (disk full, I/O error, a file or folder it may not write or open):
// the request was fine, the database cannot serve it now.
const SQLITE_STORAGE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)/;
const UNAVAILABLE_MESSAGE = new RegExp(
  `(${PG_READ_TIMEOUT}|${CONNECT_TIMEOUT}|${CONNECTION_LOST.source}|Timeout acquiring a connection|Client has encountered a connection error|timeout exceeded when trying to connect)`,
);

/**
 * True when `err` says the database is out of reach or past its deadline (a 503 worth retrying),
 * on either database: PostgreSQL down, frozen or refusing connections, the pool exhausted past
 * the deadline, SQLite's write lock held past it.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (!e || typeof e !== 'object') return false;
  if (OUT_OF_REACH_ERRORS.some((type) => err instanceof type)) return true;
  if (typeof e.code === 'string' && (UNAVAILABLE_SQLSTATE.test(e.code) || SOCKET_FAILURES.has(e.code) || e.code.startsWith('SQLITE_BUSY') || SQLITE_STORAGE.test(e.code))) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== err && isDatabaseUnavailable(e.cause);
}

/** The rows a `db.raw` select answers: pg gives a result object, better-sqlite3 the rows themselves. */
export async function rowsOf<R>(raw: Knex.Raw): Promise<R[]> {
  const result = (await raw) as R[] | { rows: R[] };
  return Array.isArray(result) ? result : result.rows;
}
