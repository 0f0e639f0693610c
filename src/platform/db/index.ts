// Kysely on SQLite (embedded default, a file under DATA_DIR) or PostgreSQL (DATABASE_URL), over
// our own drivers (drivers.ts). Repositories are the only code that builds SQL, with Kysely's
// typed builder over the row types generated from the migrated schema (generated/db), and the
// same code runs on both databases. Errors carry no bound values: those are phone numbers, names,
// sealed PINs and key hashes, and errors are logged. (The row values PostgreSQL puts in an
// error's `detail` are redacted by the logger.)
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, type Dialect } from 'kysely';
import pg from 'pg';
import { invalidConfig, type Config } from '../../config.ts';
import type { DB } from '../../../generated/db/database.ts';
import { FOREGROUND_CHECKPOINT_PAGES, startCheckpointer } from './checkpointer.ts';
import { CONNECT_TIMEOUT, CONNECTION_LOST, DATABASE_OUT_OF_REACH, PG_READ_TIMEOUT, PgDriver, SOCKET_FAILURES, SqliteDriver, type PoolStats } from './drivers.ts';

/** The tables of every area, as the migrations leave them. */
export type Database = DB;
/** The database: its pool, or (inside inTransaction) one transaction's connection. */
export type Db = Kysely<Database>;
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
export function dbClientOf(db: { getExecutor(): { readonly adapter: unknown } }): DbClient {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

export function sqliteFile(url: string | undefined, dataDir: string): string {
  if (url?.startsWith('sqlite:')) return url.slice('sqlite:'.length).replace(/^\/\//, '');
  return join(dataDir, 'hearth.sqlite');
}

const drivers = new WeakMap<Db, { stats(): PoolStats }>();
/** What inPipelinedTransaction opens a PostgreSQL connection of its own with. */
const postgresParts = new WeakMap<Db, { driver: PgDriver; dialect: Dialect; poolMax: number }>();

export function createDb(opts: DbOptions): Db {
  const deadline = opts.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  let driver: PgDriver | SqliteDriver;
  let dialect: Dialect;
  if (opts.url && /^postgres(ql)?:\/\//.test(opts.url)) {
    driver = new PgDriver(postgresPool(opts, deadline), opts.poolMax);
    dialect = { createAdapter: () => new PostgresAdapter(), createDriver: () => driver, createIntrospector: (db) => new PostgresIntrospector(db), createQueryCompiler: () => new PostgresQueryCompiler() };
  } else {
    const file = sqliteFile(opts.url, opts.dataDir);
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    driver = new SqliteDriver(() => openSqlite(file, deadline));
    dialect = { createAdapter: () => new SqliteAdapter(), createDriver: () => driver, createIntrospector: (db) => new SqliteIntrospector(db), createQueryCompiler: () => new SqliteQueryCompiler() };
  }
  const db = new Kysely<Database>({ dialect });
  drivers.set(db, driver);
  if (driver instanceof PgDriver) postgresParts.set(db, { driver, dialect, poolMax: opts.poolMax });
  return db;
}

/** PostgreSQL: how many connections the pool opens at most. */
export function postgresPoolMax(db: Db): number {
  return postgresParts.get(db)?.poolMax ?? 1;
}

/**
 * PostgreSQL: runs fn in a transaction on one pooled connection whose statements go out as they
 * are issued. Kysely's own transaction sends a statement only once the one before it is
 * answered; here calls sharing the handle concurrently pipeline theirs (the group commit in
 * sql.ts). Committed when fn resolves, rolled back when it or the COMMIT throws.
 */
export async function inPipelinedTransaction<T>(db: Db, fn: (shared: Db) => Promise<T>): Promise<T> {
  const parts = postgresParts.get(db);
  if (!parts) throw new Error('inPipelinedTransaction runs on PostgreSQL only');
  const { driver, dialect } = parts;
  const connection = await driver.acquireConnection();
  try {
    await driver.beginTransaction(connection);
    const executor = db.getExecutor().withConnectionProvider({ provideConnection: (consume) => consume(connection) });
    const shared = new Kysely<Database>({ config: { dialect }, dialect, driver, executor });
    try {
      const value = await fn(shared);
      await driver.commitTransaction(connection);
      return value;
    } catch (err) {
      // A connection that cannot roll back is not pooled again (the driver marks it broken); the
      // caller learns why the unit of work failed, not that.
      await driver.rollbackTransaction(connection).catch(() => undefined);
      throw err;
    }
  } finally {
    await driver.releaseConnection(connection);
  }
}

/** The database's connections by state (the metrics' gauge). */
export function poolStats(db: Db): PoolStats {
  return drivers.get(db)?.stats() ?? { used: 0, free: 0, pending: 0, roundTrips: 0 };
}

/**
 * A client-side deadline besides the server's: `statement_timeout` makes a server that answers
 * cancel a slow statement; a server that does not answer (frozen, cut off) is caught by pg's
 * `query_timeout`, on which the driver drops the connection (drivers.ts). Waiting for a pooled
 * connection is bounded by the deadline too.
 */
function postgresPool(opts: DbOptions, deadline: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolMax,
    connectionTimeoutMillis: deadline,
    statement_timeout: deadline,
    // A little later than the server's own cancel, which leaves the connection usable.
    query_timeout: deadline + 500,
    // A transaction left open by a caller that died must not hold its locks forever.
    idle_in_transaction_session_timeout: Math.max(deadline * 2, 10_000),
    keepAlive: true,
    // Statements go out without waiting for the answer to the one before (drivers.ts).
    pipeline: true,
    // Statements prepared on a connection (prepared.ts) keep their parse but are planned for
    // each run's values: a generic plan, made once while a table was small or for values the
    // statistics cannot tell apart (a collection's rare group), scanned whole tables
    // (make bench on a fresh database: 1,065 claims a second planned each time, 693 with it).
    options: ['-c plan_cache_mode=force_custom_plan', ...(opts.schema ? [`-c search_path=${opts.schema}`] : [])].join(' '),
  });
  // An idle connection the server closed is dropped by the pool; the next request reports any
  // lasting failure, so this is not an error of its own.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * WAL lets readers run beside the writer; synchronous NORMAL leaves the log's fsync to
 * checkpoints, where FULL would add one to every commit on the event loop (USSD keypresses under
 * make bench fell from ~3,200 to ~2,000 a second with it). busy_timeout makes a second process
 * wait for the write lock (up to the deadline) instead of failing at once; foreign keys are off
 * by default in SQLite; checkpoints run in a worker thread (see checkpointer.ts).
 */
function openSqlite(file: string, deadline: number): BetterSqlite3.Database {
  const conn = new BetterSqlite3(file);
  try {
    conn.pragma('journal_mode = WAL');
    conn.pragma('synchronous = NORMAL');
    conn.pragma(`busy_timeout = ${deadline}`);
    conn.pragma('foreign_keys = ON');
    if (file !== ':memory:') checkpointInBackground(conn, file);
    return conn;
  } catch (err) {
    conn.close();
    throw err;
  }
}

/** Hands checkpoints to a worker for as long as the connection is open. */
function checkpointInBackground(conn: BetterSqlite3.Database, file: string): void {
  conn.pragma(`wal_autocheckpoint = ${FOREGROUND_CHECKPOINT_PAGES}`);
  const checkpointer = startCheckpointer(file);
  const close = conn.close.bind(conn);
  conn.close = () => {
    checkpointer.stop();
    return close();
  };
}

/** The database the configuration names. A folder that cannot hold the SQLite file is a ConfigError naming the variable that put it there. */
export function createDbFromConfig(config: Config): Db {
  try {
    return createDb({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: config.DB_POOL_MAX, queryTimeoutMs: config.DB_QUERY_TIMEOUT_MS });
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
    return await Promise.race([sql`select 1 as ok`.execute(db).then(() => true, () => false), timeout]);
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
const UNAVAILABLE_MESSAGE = new RegExp(`(${PG_READ_TIMEOUT}|${DATABASE_OUT_OF_REACH}|timeout expired|${CONNECTION_LOST.source}|${CONNECT_TIMEOUT})`);

/**
 * True when `err` says the database is out of reach or past its deadline (a 503 worth retrying),
 * on either database: PostgreSQL down, frozen or refusing connections, the pool exhausted past
 * the deadline, SQLite's write lock held past it.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && (UNAVAILABLE_SQLSTATE.test(e.code) || SOCKET_FAILURES.has(e.code) || e.code.startsWith('SQLITE_BUSY') || SQLITE_STORAGE.test(e.code))) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== err && isDatabaseUnavailable(e.cause);
}
