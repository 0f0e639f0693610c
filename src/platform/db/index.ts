// Knex on SQLite (embedded default, a file under DATA_DIR) or PostgreSQL (DATABASE_URL).
// Repositories are the only code that builds SQL, and the same code runs on both. An error's
// message carries its SQL with `?` placeholders, never the bound values (compileSqlOnError):
// those are phone numbers, names, sealed PINs and key hashes, and errors are logged. (The row
// values PostgreSQL puts in an error's `detail` are redacted by the logger.)
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
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
}

export function dbClientOf(db: Db): DbClient {
  return db.client.config.client === 'pg' ? 'postgres' : 'sqlite';
}

export function sqliteFile(url: string | undefined, dataDir: string): string {
  if (url?.startsWith('sqlite:')) return url.slice('sqlite:'.length).replace(/^\/\//, '');
  return join(dataDir, 'hearth.sqlite');
}

/**
 * Knex prints a failed connection attempt with its stack before rejecting with the same error,
 * which its callers report (the CLI in one line, requests as a logged 500): only that print is
 * dropped.
 */
const knexLog = {
  warn(message: unknown) {
    if (!String(message).startsWith('Acquire connection error')) console.warn(message);
  },
};

export function createDb(opts: DbOptions): Db {
  if (opts.url && /^postgres(ql)?:\/\//.test(opts.url)) {
    return knex({
      client: 'pg',
      log: knexLog,
      compileSqlOnError: false,
      connection: opts.url,
      searchPath: opts.schema ? [opts.schema] : undefined,
      pool: { min: 0, max: opts.poolMax, acquireTimeoutMillis: 5000 },
      acquireConnectionTimeout: 5000,
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
      // instead of failing at once; foreign keys are off by default in SQLite; checkpoints run
      // in a worker thread (see checkpointer.ts).
      afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
        try {
          conn.pragma('journal_mode = WAL');
          conn.pragma('synchronous = NORMAL');
          conn.pragma('busy_timeout = 5000');
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
  return createDb({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: config.DB_POOL_MAX });
}

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = await db.migrate.latest({ migrationSource });
  return applied as string[];
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
