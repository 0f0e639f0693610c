// Parameterised SQL for the request paths `make bench` measures, run without Knex's query
// builder, compiler and runner: on this machine those cost 30-60 µs a statement, more than
// SQLite takes to run it. The same SQL text runs on both databases: `?` placeholders (Knex
// numbers them for PostgreSQL), and only syntax both accept.
import type { Knex } from 'knex';
import { dbClientOf, type Db, type DbClient } from './index.ts';

export type Binding = string | number | boolean | null;

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
}

/** better-sqlite3 binds no booleans (Knex converts them the same way). */
const sqliteBindings = (bindings: readonly Binding[]) => bindings.map((b) => (typeof b === 'boolean' ? Number(b) : b));

/** Runs a statement on a SQLite connection: from the pool for just that statement, or one held. */
type OnConnection = <R>(run: (conn: SqliteConnection) => R) => Promise<R>;

/**
 * SQLite: each statement runs on the connection Knex's pool holds, taken from the pool for that
 * statement (or the transaction's own connection), so it never runs inside another request's
 * open transaction. Statements are prepared once (see createDb).
 */
class SqliteSql implements Sql {
  readonly dialect = 'sqlite';

  constructor(private readonly onConnection: OnConnection) {}

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

const pooled = (client: Knex.Client): OnConnection => async (run) => {
  const conn = (await client.acquireConnection()) as SqliteConnection;
  try {
    return run(conn);
  } finally {
    await client.releaseConnection(conn);
  }
};

class PostgresSql implements Sql {
  readonly dialect = 'postgres';

  constructor(private readonly db: Db | Knex.Transaction) {}

  async one<T>(sql: string, bindings: readonly Binding[] = []): Promise<T | undefined> {
    return (await this.all<T>(sql, bindings))[0];
  }

  async all<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    return (await this.db.raw(sql, bindings as Binding[])).rows as T[];
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    return (await this.db.raw(sql, bindings as Binding[])).rowCount as number;
  }
}

/** The SQL runner over a database or a Knex transaction. */
export function sqlOf(db: Db | Knex.Transaction): Sql {
  return dbClientOf(db as Db) === 'postgres' ? new PostgresSql(db) : new SqliteSql(pooled(db.client as Knex.Client));
}

/**
 * Runs fn in one transaction: committed when it resolves, rolled back when it throws. On SQLite
 * it holds the pool's connection from BEGIN IMMEDIATE (the write lock up front, so a second
 * process waits for it rather than failing on upgrade) to COMMIT, without Knex's transaction
 * objects (about 150 µs of JS per transaction here). On PostgreSQL it is a Knex transaction.
 */
export async function inTransaction<T>(db: Db, fn: (sql: Sql) => Promise<T>): Promise<T> {
  if (dbClientOf(db) === 'postgres') return db.transaction((trx) => fn(new PostgresSql(trx)));
  const client = db.client as Knex.Client;
  const conn = (await client.acquireConnection()) as SqliteConnection & { inTransaction: boolean };
  try {
    conn.prepare('begin immediate').run([]);
    try {
      const result = await fn(new SqliteSql(async (run) => run(conn)));
      conn.prepare('commit').run([]);
      return result;
    } catch (err) {
      if (conn.inTransaction) conn.prepare('rollback').run([]);
      throw err;
    }
  } finally {
    await client.releaseConnection(conn);
  }
}

/**
 * ` for update` on PostgreSQL, locking the rows a read returns until its transaction ends.
 * SQLite has no row locks and needs none: it runs one writing transaction at a time.
 */
export const forUpdate = (sql: Sql) => (sql.dialect === 'postgres' ? ' for update' : '');

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
