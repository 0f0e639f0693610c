// Kysely drivers for our two databases. Kysely's own dialects fit neither as we run them: SQLite
// here shares its one connection between requests, held by one caller at a time (a transaction
// holds it across awaits), with prepared statements reused; PostgreSQL pipelines a transaction's
// statements (pg's pipeline mode) and drops a connection its client-side deadline fired on
// instead of returning it to the pool.
import type BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import pg from 'pg';
import { setBounded } from '../bounded-map.ts';

const STATEMENT_CACHE_SIZE = 500;

/** Connections by state, and the exchanges with the database so far, for the metrics. */
export interface PoolStats {
  used: number;
  free: number;
  pending: number;
  /** PostgreSQL: batches of statements written together and answered; SQLite: statements. */
  roundTrips: number;
}

/** A driver's count of round trips, shared by its connections. */
class RoundTrips {
  count = 0;
}

/** A connection of ours: statements only, no streaming (no query of ours streams). */
abstract class StatementConnection implements DatabaseConnection {
  abstract executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>>;

  // eslint-disable-next-line require-yield -- the interface requires the method
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported');
  }
}

const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * One better-sqlite3 connection. better-sqlite3 statements are reusable (execution is
 * synchronous, so never interleaved), and SQLite re-prepares them itself after a schema change:
 * a bounded cache keyed by SQL text makes repeated queries skip the parse, which costs more than
 * running most of ours.
 */
class SqliteConnection extends StatementConnection {
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(
    readonly raw: BetterSqlite3.Database,
    private readonly trips: RoundTrips,
  ) {
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
    this.trips.count++;
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
export class SqliteDriver implements Driver {
  private connection?: SqliteConnection;
  private readonly trips = new RoundTrips();
  private held = false;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly open: () => BetterSqlite3.Database) {}

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(COMMIT);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(ROLLBACK);
  }

  init(): Promise<void> {
    this.connection = new SqliteConnection(this.open(), this.trips);
    return Promise.resolve();
  }

  async acquireConnection(): Promise<SqliteConnection> {
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.held = true;
    return this.connection!;
  }

  stats(): PoolStats {
    return { used: this.held ? 1 : 0, free: this.held || !this.connection ? 0 : 1, pending: this.waiting.length, roundTrips: this.trips.count };
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

/** Queries run as one: their parts, in order, and whether each part's outcome is given apart (see `together`). */
const batches = new WeakMap<CompiledQuery, { parts: readonly CompiledQuery[]; settled: boolean }>();
/** Statements PostgreSQL keeps parsed on each connection, by name, and whether it also keeps their plan (see `named`). */
const names = new WeakMap<CompiledQuery, { name: string; planOnce: boolean; alsoAlone: boolean }>();
/** Writes whose outcome no one waits for (see `behind`). */
const writesBehind = new WeakSet<CompiledQuery>();

/**
 * The parts as one query: on PostgreSQL they are written together and answered in one round trip
 * (pipelined; each still runs as a statement of its own, in order). Its result's rows are the
 * parts' results. Run it only on a PostgreSQL connection.
 */
export function together(parts: readonly CompiledQuery[]): CompiledQuery {
  const batch = CompiledQuery.raw('-- pipelined batch');
  batches.set(batch, { parts, settled: false });
  return batch;
}

/** Each statement's own outcome in a batch sent by `settledTogether`. */
export type StatementOutcome = { ok: true; result: QueryResult<unknown> } | { ok: false; error: unknown };

/**
 * `together` outside a transaction, where each statement is a transaction of its own: a failed
 * one fails nothing else, and the batch's rows are every statement's outcome (StatementOutcome)
 * instead of the first failure thrown. Only a connection that could not be had fails it whole.
 */
export function settledTogether(parts: readonly CompiledQuery[]): CompiledQuery<StatementOutcome> {
  const batch = CompiledQuery.raw('-- pipelined batch, each outcome apart');
  batches.set(batch, { parts, settled: true });
  return batch;
}

/** Whether the statement may share a transaction with others sent beside it ('also alone', see `planned`). */
export const isAlsoAlone = (query: CompiledQuery): boolean => names.get(query)?.alsoAlone ?? false;

/**
 * A write whose outcome no one waits for: inside a PostgreSQL transaction it goes out with the
 * next statement or with the COMMIT, whose failure (or that statement's) then reports its error.
 * Elsewhere it runs at once.
 */
export function behind(write: CompiledQuery): CompiledQuery {
  writesBehind.add(write);
  return write;
}

/**
 * The query as a statement each PostgreSQL connection parses once and then only binds: for the
 * few fixed statements every request runs (prepared.ts). `name` must stand for this SQL text
 * alone. A connection plans each run for its values (index.ts `postgresPool`); with `planOnce`,
 * in a transaction, it plans the statement once and keeps that plan (see PLAN_ONCE); with
 * 'also alone', outside one too (see `planned`).
 */
export function named<R>(query: CompiledQuery<R>, name: string, planOnce: PlanOnce = false): CompiledQuery<R> {
  names.set(query, { name, planOnce: planOnce !== false, alsoAlone: planOnce === 'also alone' });
  return query;
}

/** Whether a named statement is planned once (prepared.ts `planOnce`). */
export type PlanOnce = boolean | 'also alone';

/**
 * A statement planned once, run 'also alone' here though not everywhere: where it goes beside
 * statements that are (a pending claim's reconcile reads its collection with its claim), it
 * shares their transaction, while alone elsewhere it stays planned for its values.
 */
export function alsoAlone<R>(query: CompiledQuery<R>): CompiledQuery<R> {
  const statement = names.get(query);
  if (!statement?.planOnce) throw new Error('alsoAlone: the statement is not planned once');
  names.set(query, { ...statement, alsoAlone: true });
  return query;
}

const BEGIN = CompiledQuery.raw('begin');

/**
 * Transaction-local planning for the statements that follow, until the next of these. PLAN_ONCE:
 * a prepared statement takes a generic plan, made on its first run and then kept by the
 * connection, made from indexes only (a sequential scan would be chosen only where a statement has
 * no index to read by). It is for statements that have one index only to read each table by
 * (prepared.ts `planOnce`), and the foreign-key checks of their writes: their plan is the same
 * whatever the values or the tables' size. PLAN_EACH_RUN gives back the connection's own planning
 * for the others, whose generic plan could scan a table or read by the wrong index. Planning each
 * run was most of PostgreSQL's CPU per claim (pgbench, pipelined, one client: a claim's opening
 * 0.28-0.30 ms planned each run, 0.22-0.24 planned once; its partner read 0.39-0.44 and 0.20-0.24).
 */
const PLAN_ONCE = named(CompiledQuery.raw("select set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)"), 'hearth_plan_once');
const PLAN_EACH_RUN = named(CompiledQuery.raw("select set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_seqscan', 'on', true)"), 'hearth_plan_each_run');

/** The message of the error a call gets while the server is known out of reach (see Reach). */
export const DATABASE_OUT_OF_REACH = 'The database did not answer moments ago; it is not asked again yet';

/** How long every call fails at once after the server was found out of reach, before one tries it again. */
const OUT_OF_REACH_PAUSE_MS = 1000;

/** Socket errors of a connection that could not be made or was lost (isDatabaseUnavailable counts them too). */
export const SOCKET_FAILURES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** pg's messages for a connection lost while in use. */
export const CONNECTION_LOST = /Connection terminated|Connection ended unexpectedly|Client has encountered a connection error/;
/** pg-pool's message when its connectionTimeoutMillis passed: for a new connection, or for a pooled one to come free. */
export const CONNECT_TIMEOUT = 'timeout exceeded when trying to connect';

/** How a failed call had got on: connecting, or over a connection it had. */
type CallStage = { connecting: true; couldConnect: boolean } | { connecting: false };

/**
 * Whether `err` says the server cannot be reached. Connecting: a connection refused, lost or not
 * made in time, the server shutting down (08, 57P01-57P03). Over a connection: no answer within
 * the deadline, or a network that no longer carries it. A connection lost while in use is not
 * enough (a backend terminated by an administrator, a proxy or an idle cut on a healthy
 * server): its call fails, and the next one connects again. A server that answered, even with an
 * error (a statement it cancelled, too many connections, a refused login), was reached; so was
 * the pool when its connections were only all busy.
 */
function saysOutOfReach(err: unknown, stage: CallStage): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (message.endsWith(PG_READ_TIMEOUT) || UNREACHABLE_NETWORK.has(code)) return true;
  if (!stage.connecting) return false;
  if (SOCKET_FAILURES.has(code) || /^(08...|57P0[1-3])$/.test(code) || CONNECTION_LOST.test(message)) return true;
  return stage.couldConnect && message.includes(CONNECT_TIMEOUT);
}

/** Socket errors that say the network no longer reaches the server, whatever the call was doing. */
const UNREACHABLE_NETWORK: ReadonlySet<string> = new Set(['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * What the driver last learnt of the server's reach: the one database deadline holds for a
 * request, not for each of its calls. Once a call finds the server out of reach, every call
 * waiting for a connection fails at once, and new ones do for OUT_OF_REACH_PAUSE_MS; then one at
 * a time tries the server until one is answered. A request whose key lookup waited the whole
 * deadline for a frozen server is then not held another deadline by its query, and a lost
 * server does not hold every request for a deadline of its own.
 */
class Reach {
  private outOfReach = false;
  private pausedUntil = 0;
  private trying = false;
  private readonly waiting = new Set<(err: Error) => void>();

  /** Throws while the server is known out of reach; true when the call is the one trying it again. */
  admit(): boolean {
    if (!this.outOfReach) return false;
    if (this.trying || Date.now() < this.pausedUntil) throw new Error(DATABASE_OUT_OF_REACH);
    this.trying = true;
    return true;
  }

  /** The connection, unless the server is found out of reach first (a connection that comes after that is released). */
  async connect(pool: pg.Pool): Promise<pg.PoolClient> {
    let fail!: (err: Error) => void;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    this.waiting.add(fail);
    const connecting = pool.connect();
    try {
      return await Promise.race([connecting, failed]);
    } catch (err) {
      connecting.then((client) => client.release(), () => undefined);
      throw err;
    } finally {
      this.waiting.delete(fail);
    }
  }

  /** The server answered. */
  reached(): void {
    this.outOfReach = false;
    this.trying = false;
  }

  /** A call failed: when that says the server is out of reach, the waiting calls fail and new ones pause. */
  failed(err: unknown, stage: CallStage): void {
    if (!saysOutOfReach(err, stage)) return this.reached();
    this.outOfReach = true;
    this.trying = false;
    this.pausedUntil = Date.now() + OUT_OF_REACH_PAUSE_MS;
    for (const fail of this.waiting) fail(new Error(DATABASE_OUT_OF_REACH));
    this.waiting.clear();
  }

  /** A trial ended without a statement: the next call may try. */
  untried(): void {
    this.trying = false;
  }
}

/** The socket under a pg client. */
interface PgStream {
  readonly writableCorked: number;
  cork(): void;
  uncork(): void;
  destroy(): void;
}

/**
 * A pooled pg client in pipeline mode. A transaction costs no round trip of its own: its BEGIN
 * goes out with its first statement, and its writes behind (`behind`) with the statement after
 * them or with its COMMIT. A claim submission is then two round trips, not five (its reads,
 * `together`; its writes and COMMIT), each of which woke this process and a backend on shared
 * cores.
 */
class PgConnection extends StatementConnection {
  /** Set once the client-side deadline fired: the connection is closed, not pooled again. */
  broken?: Error;
  /** Statements to write ahead of the next one: an unsent BEGIN, then writes behind. */
  private ahead: CompiledQuery[] = [];
  private inTransaction = false;
  /** In a transaction: whether the statements sent last were planned once (PLAN_ONCE). */
  private plannedOnce = false;

  /** Set while the connection carries the call trying an out-of-reach server again, until its first answer. */
  trial = false;

  constructor(
    readonly client: pg.PoolClient,
    private readonly trips: RoundTrips,
    private readonly reach: Reach,
  ) {
    super();
  }

  begin(): void {
    this.inTransaction = true;
    this.plannedOnce = false;
    this.ahead = [BEGIN];
  }

  /**
   * COMMIT, or nothing for a transaction that sent no statement. PostgreSQL answers the COMMIT of
   * a transaction a failed statement aborted with ROLLBACK, not an error: that is thrown here, so
   * a caller that caught the statement's error cannot take its unit of work for stored.
   */
  async commit(): Promise<void> {
    const ahead = this.end();
    if (ahead.length === 1 && ahead[0] === BEGIN) return;
    const results = await this.send([...ahead, COMMIT], true);
    if (results.at(-1)!.command === 'ROLLBACK') throw new Error('the transaction was rolled back: one of its statements had failed');
  }

  /** ROLLBACK of what was sent; writes not yet sent are dropped. */
  async rollback(): Promise<void> {
    const ahead = this.end();
    // A failed COMMIT has already ended the transaction; nothing was sent while BEGIN waits.
    if (ahead[0] === BEGIN || this.client.getTransactionStatus?.() === 'I') return;
    await this.send([ROLLBACK]);
  }

  private end(): CompiledQuery[] {
    this.inTransaction = false;
    return this.ahead.splice(0);
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (writesBehind.has(query) && this.inTransaction) {
      this.ahead.push(query);
      return { rows: [] };
    }
    const batch = batches.get(query);
    if (batch?.settled) {
      if (this.inTransaction) throw new Error('settledTogether: its statements are transactions of their own, not parts of one');
      const outcomes = await this.sendSettled(batch.parts, false);
      return { rows: outcomes.map((o): StatementOutcome => (o.status === 'fulfilled' ? { ok: true, result: resultOf(o.value) } : { ok: false, error: o.reason })) } as QueryResult<R>;
    }
    const ahead = this.ahead.splice(0);
    const results = await this.send([...ahead, ...(batch?.parts ?? [query])]);
    const own = results.slice(ahead.length).map(resultOf);
    return (batch ? { rows: own } : own[0]!) as QueryResult<R>;
  }

  /**
   * Holds what is sent on the socket until the current tick's promise jobs have run: the group
   * commit's calls, sharing this connection, each send their reads in that tick, and they leave
   * in one write (one wakeup of the backend) instead of one each.
   */
  private corkUntilTicked(stream: PgStream): void {
    // Corked already: by an earlier send of this tick (pg's own cork lasts only while it writes).
    if (stream.writableCorked) return;
    stream.cork();
    process.nextTick(() => stream.uncork());
  }

  /**
   * The statements as they go out, each planned as it asks. In a transaction: PLAN_ONCE before a
   * statement planned once, PLAN_EACH_RUN before any other that follows such. Outside one, a
   * statement planned once 'also alone' is still a transaction of its own, now an explicit one
   * that plans it once (BEGIN, PLAN_ONCE, it, COMMIT): the setting ends with it, whatever its
   * outcome, and the connection plans the others for their values. The three statements around
   * it cost the request thread about 0.03 ms, worth it only where planning costs more: a read of
   * claims (nine indexes to weigh). A pending claim's reconcile reads its partners outside a
   * transaction: planned each run that read was 0.45 ms of PostgreSQL's CPU, in its own
   * planned-once transaction 0.07-0.10 (pgbench, pipelined, a collection of 13,600 claims); a
   * claim by id 0.089 and 0.057. An entity by DID gained 0.01-0.03 ms of the database's CPU and
   * cost 0.035 of the server's: it is planned each run when alone. Such statements sent one after
   * another share that transaction (they commit together or not at all; the first failure is
   * thrown, as always).
   * `own` marks the statements given, whose answers are the caller's.
   */
  private planned(queries: readonly CompiledQuery[], inTransaction: boolean): { wire: CompiledQuery[]; own: boolean[] } {
    const wire: CompiledQuery[] = [];
    const own: boolean[] = [];
    let alone = false;
    const around = (q: CompiledQuery) => {
      wire.push(q);
      own.push(false);
    };
    for (const q of queries) {
      const { planOnce: once = false, alsoAlone = false } = names.get(q) ?? {};
      if (!inTransaction) {
        if (alsoAlone !== alone) {
          if (alsoAlone) [BEGIN, PLAN_ONCE].forEach(around);
          else around(COMMIT);
          alone = alsoAlone;
        }
        wire.push(q);
        own.push(true);
        continue;
      }
      if (q !== BEGIN && q !== COMMIT && once !== this.plannedOnce) {
        wire.push(once ? PLAN_ONCE : PLAN_EACH_RUN);
        own.push(false);
        this.plannedOnce = once;
      }
      wire.push(q);
      own.push(true);
    }
    if (alone) around(COMMIT);
    return { wire, own };
  }

  /**
   * One statement on the connection. Given a config object, pg copies it property by property
   * (2% of the request thread under claim submissions); its Query, made from the text and the
   * values, is taken as it is.
   */
  private submit(q: CompiledQuery): Promise<pg.QueryResult> {
    return new Promise((resolve, reject) => {
      const query = new pg.Query(q.sql, q.parameters as unknown[], (err, result) => (err ? reject(err) : resolve(result)));
      const name = names.get(q)?.name;
      if (name) (query as { name?: string }).name = name;
      this.client.query(query);
    });
  }

  /**
   * Writes the statements at once (one write on the socket, with any others sent in this tick)
   * and waits for every answer; the first failure, in order, is thrown (in a transaction the
   * statements after it fail with it). `inTransaction`: whether they are sent in one (a COMMIT ends it).
   */
  private async send(queries: CompiledQuery[], inTransaction = this.inTransaction): Promise<pg.QueryResult[]> {
    const settled = await this.sendSettled(queries, inTransaction);
    const failure = settled.find((s) => s.status === 'rejected');
    if (failure) throw failure.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<pg.QueryResult>).value);
  }

  /** `send`, giving every statement's outcome; the first failure, in order, is what the connection learns of the server's reach. */
  private async sendSettled(queries: readonly CompiledQuery[], inTransaction: boolean): Promise<PromiseSettledResult<pg.QueryResult>[]> {
    const { stream } = (this.client as unknown as { connection: { stream: PgStream } }).connection;
    this.trips.count++;
    this.corkUntilTicked(stream);
    const { wire, own } = this.planned(queries, inTransaction);
    const answers = wire.map((q) => this.submit(q));
    const settled = (await Promise.allSettled(answers)).filter((_, i) => own[i]);
    this.trial = false;
    const failure = settled.find((s) => s.status === 'rejected');
    if (!failure) this.reach.reached();
    else {
      const err = failure.reason as Error;
      this.reach.failed(err, { connecting: false });
      // The statement may still run on the server: the connection would carry it (or its
      // half-done transaction) to the next request.
      if (err?.message?.endsWith(PG_READ_TIMEOUT)) {
        this.broken = err;
        stream.destroy();
      }
    }
    return settled;
  }
}

/** A pg result as Kysely's. */
const resultOf = (r: pg.QueryResult): QueryResult<unknown> => ({ rows: r.rows, numAffectedRows: r.rowCount === null ? undefined : BigInt(r.rowCount) });

/** PostgreSQL over a pg pool whose connections carry the deadline (see index.ts). */
export class PgDriver implements Driver {
  private readonly connections = new WeakMap<pg.PoolClient, PgConnection>();
  private readonly trips = new RoundTrips();
  private readonly reach = new Reach();

  constructor(
    private readonly pool: pg.Pool,
    private readonly poolMax: number,
  ) {}

  beginTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as PgConnection).begin();
    return Promise.resolve();
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PgConnection).commit();
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PgConnection).rollback();
  }

  init(): Promise<void> {
    return Promise.resolve();
  }

  stats(): PoolStats {
    return { used: this.pool.totalCount - this.pool.idleCount, free: this.pool.idleCount, pending: this.pool.waitingCount, roundTrips: this.trips.count };
  }

  async acquireConnection(): Promise<PgConnection> {
    const trial = this.reach.admit();
    // A wait for a connection that could be made was a wait for the server, not for a busy one.
    const couldConnect = this.pool.totalCount < this.poolMax;
    let client: pg.PoolClient;
    try {
      client = await this.reach.connect(this.pool);
    } catch (err) {
      this.reach.failed(err, { connecting: true, couldConnect });
      throw err;
    }
    let connection = this.connections.get(client);
    if (!connection) {
      const created = new PgConnection(client, this.trips, this.reach);
      // A connection lost while checked out: its statement fails with the same error, and it is
      // closed on release, not pooled again. (The pool watches only idle ones.)
      client.on('error', (err) => (created.broken = err));
      this.connections.set(client, (connection = created));
    }
    connection.trial = trial;
    return connection;
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    const pgConnection = connection as PgConnection;
    if (pgConnection.trial) {
      pgConnection.trial = false;
      this.reach.untried();
    }
    const { client, broken } = pgConnection;
    client.release(broken);
    return Promise.resolve();
  }

  destroy(): Promise<void> {
    return this.pool.end();
  }
}
