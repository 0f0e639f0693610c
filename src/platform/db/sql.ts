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

/**
 * SQLite: each statement runs on the connection Knex's pool holds, taken from the pool for that
 * statement (or the transaction's own connection when `db` is a transaction), so it never runs
 * inside another request's open transaction. Statements are prepared once (see createDb).
 */
class SqliteSql implements Sql {
  readonly dialect = 'sqlite';

  constructor(private readonly client: Knex.Client) {}

  private async exec(sql: string, bindings: readonly Binding[]): Promise<unknown[] | number> {
    const conn = (await this.client.acquireConnection()) as SqliteConnection;
    try {
      const statement = conn.prepare(sql);
      return statement.reader ? statement.all(sqliteBindings(bindings)) : statement.run(sqliteBindings(bindings)).changes;
    } finally {
      await this.client.releaseConnection(conn);
    }
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

/** The SQL runner over a database or a transaction. */
export function sqlOf(db: Db | Knex.Transaction): Sql {
  return dbClientOf(db as Db) === 'postgres' ? new PostgresSql(db) : new SqliteSql(db.client as Knex.Client);
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
