// Kysely drivers for our two databases. Kysely's own dialects fit neither as we run them: SQLite
// here shares its one connection between requests, held by one caller at a time (a transaction
// holds it across awaits), with prepared statements reused; PostgreSQL drops a connection its
// client-side deadline fired on instead of returning it to the pool.
import type BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import type pg from 'pg';
import { setBounded } from '../bounded-map.ts';

const STATEMENT_CACHE_SIZE = 500;

/** Connections by state, for the metrics. */
export interface PoolStats {
  used: number;
  free: number;
  pending: number;
}

/**
 * One better-sqlite3 connection. better-sqlite3 statements are reusable (execution is
 * synchronous, so never interleaved), and SQLite re-prepares them itself after a schema change:
 * a bounded cache keyed by SQL text makes repeated queries skip the parse, which costs more than
 * running most of ours.
 */
/** A connection of ours: statements only, no streaming (no query of ours streams). */
abstract class StatementConnection implements DatabaseConnection {
  abstract executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>>;

  // eslint-disable-next-line require-yield -- the interface requires the method
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported');
  }
}

const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/** Transactions as plain statements on the held connection; `begin` is the database's own. */
abstract class StatementTransactions {
  constructor(private readonly begin: CompiledQuery) {}

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(this.begin);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(COMMIT);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(ROLLBACK);
  }
}

class SqliteConnection extends StatementConnection {
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(readonly raw: BetterSqlite3.Database) {
    super();
  }

  private prepare(sql: string): BetterSqlite3.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.raw.prepare(sql);
      setBounded(this.statements, sql, statement, STATEMENT_CACHE_SIZE);
    }
    return statement;
  }

  executeQuery<R>({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.prepare(sql);
    const bindings = parameters.map(sqliteBinding);
    if (statement.reader) return Promise.resolve({ rows: statement.all(bindings) as R[] });
    const { changes } = statement.run(bindings);
    return Promise.resolve({ rows: [], numAffectedRows: BigInt(changes) });
  }
}

/** better-sqlite3 binds no booleans. */
const sqliteBinding = (b: unknown) => (typeof b === 'boolean' ? Number(b) : b);

/**
 * The SQLite connection goes to one holder at a time, in the order they asked: a statement alone
 * holds it for that statement, a transaction until it ends, so no statement ever runs inside
 * another request's open transaction.
 */
export class SqliteDriver extends StatementTransactions implements Driver {
  private connection?: SqliteConnection;
  private held = false;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly open: () => BetterSqlite3.Database) {
    super(CompiledQuery.raw('begin immediate'));
  }

  init(): Promise<void> {
    this.connection = new SqliteConnection(this.open());
    return Promise.resolve();
  }

  async acquireConnection(): Promise<SqliteConnection> {
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.held = true;
    return this.connection!;
  }

  stats(): PoolStats {
    return { used: this.held ? 1 : 0, free: this.held || !this.connection ? 0 : 1, pending: this.waiting.length };
  }

  releaseConnection(): Promise<void> {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
    return Promise.resolve();
  }

  destroy(): Promise<void> {
    this.connection?.raw.close();
    return Promise.resolve();
  }
}

/** The message of pg's client-side `query_timeout` error. */
export const PG_READ_TIMEOUT = 'Query read timeout';

class PgConnection extends StatementConnection {
  /** Set once the client-side deadline fired: the connection is closed, not pooled again. */
  broken?: Error;

  constructor(readonly client: pg.PoolClient) {
    super();
  }

  async executeQuery<R>({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    try {
      const result = await this.client.query<R & pg.QueryResultRow>({ text: sql, values: parameters as unknown[] });
      return { rows: result.rows, numAffectedRows: result.rowCount === null ? undefined : BigInt(result.rowCount) };
    } catch (err) {
      // The statement may still run on the server: the connection would carry it (or its
      // half-done transaction) to the next request.
      if ((err as Error)?.message?.endsWith(PG_READ_TIMEOUT)) {
        this.broken = err as Error;
        (this.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      }
      throw err;
    }
  }
}

/** PostgreSQL over a pg pool whose connections carry the deadline (see index.ts). */
export class PgDriver extends StatementTransactions implements Driver {
  private readonly connections = new WeakMap<pg.PoolClient, PgConnection>();

  constructor(private readonly pool: pg.Pool) {
    super(CompiledQuery.raw('begin'));
  }

  init(): Promise<void> {
    return Promise.resolve();
  }

  stats(): PoolStats {
    return { used: this.pool.totalCount - this.pool.idleCount, free: this.pool.idleCount, pending: this.pool.waitingCount };
  }

  async acquireConnection(): Promise<PgConnection> {
    const client = await this.pool.connect();
    let connection = this.connections.get(client);
    if (!connection) {
      const created = new PgConnection(client);
      // A connection lost while checked out: its statement fails with the same error, and it is
      // closed on release, not pooled again. (The pool watches only idle ones.)
      client.on('error', (err) => (created.broken = err));
      this.connections.set(client, (connection = created));
    }
    return connection;
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    const { client, broken } = connection as PgConnection;
    client.release(broken);
    return Promise.resolve();
  }

  destroy(): Promise<void> {
    return this.pool.end();
  }
}
