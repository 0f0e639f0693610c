// Queries built and compiled once, then run with new values: for the statements of the busiest
// request paths (claim submission, an agent turn's preferences, entity lookups). Building a
// Kysely query anew each time (its nodes, their freezing, the compiler's walk) was 8-9% of the
// server's CPU under `make bench` (claims), 15-20% fewer claims a second than the hand-written
// SQL it replaced, and 8% fewer preference reads. The query is still Kysely's typed builder:
// only its values are left open. On PostgreSQL it is also a named statement that each connection
// parses once (drivers.ts `named`): PostgreSQL's CPU per claim fell from 0.46 to 0.35 ms.
import { CompiledQuery, type Compilable, type QueryResult } from 'kysely';
import { named, type PlanOnce } from './drivers.ts';
import { dbClientOf, type Db, type DbClient } from './index.ts';
import { inSharedRoundTrip } from './sql.ts';

export { alsoAlone } from './drivers.ts';

/** How many templates there are: each is named after its number. */
let templateCount = 0;

/** Where a value goes: argument `arg`, or its property `key` (for a row given as an object). */
class Slot {
  constructor(
    readonly arg: number,
    readonly key?: string,
  ) {}
}

interface Template {
  /** The statement's name on PostgreSQL connections (drivers.ts `named`). */
  name: string;
  sql: string;
  /** Each bound value: a slot to fill from the arguments, or a constant of the query itself. */
  values: (Slot | { constant: unknown })[];
}

/**
 * `build` as a prepared query: built (once per database kind) with a placeholder for each
 * argument, then run with the arguments' values in those places. An argument given as a row
 * object names its columns in `options.rows` (by argument index): the placeholder is then an object of
 * one placeholder per column, and every column must be present (null, not undefined, for none).
 * `build` must give the same SQL for every value: no branching on an argument, no lists whose
 * length varies (write one prepared query per shape instead).
 */
export function prepared<A extends unknown[], R>(build: (db: Db, ...args: A) => Compilable<R>, { rows = {}, planOnce = false, sharesRoundTrip = false }: PreparedOptions = {}): Prepared<A, R> {
  const arity = build.length - 1;
  const templates = new Map<DbClient, Template>();
  const templateFor = (db: Db): Template => {
    const dialect = dbClientOf(db);
    let template = templates.get(dialect);
    if (!template) {
      const placeholders = Array.from({ length: arity }, (_, i) => {
        const columns = rows[i];
        return columns ? Object.fromEntries(columns.map((c) => [c, new Slot(i, c)])) : new Slot(i);
      });
      const compiled = build(db, ...(placeholders as A)).compile();
      template = { name: `hearth_${++templateCount}`, sql: compiled.sql, values: compiled.parameters.map((p) => (p instanceof Slot ? p : { constant: p })) };
      templates.set(dialect, template);
    }
    return template;
  };
  const query = (db: Db, ...args: A): CompiledQuery<R> => {
    const { name, sql, values } = templateFor(db);
    return named(CompiledQuery.raw(sql, values.map((v) => (v instanceof Slot ? valueAt(args, v) : v.constant))) as CompiledQuery<R>, name, planOnce);
  };
  const run = sharesRoundTrip
    ? async (db: Db, ...args: A) => (await inSharedRoundTrip(db, [query(db, ...args)] as const))[0]
    : async (db: Db, ...args: A) => db.executeQuery(query(db, ...args));
  return Object.assign(run, { query });
}

export interface PreparedOptions {
  /** Arguments given as row objects: their columns, by argument index. */
  rows?: Partial<Record<number, readonly string[]>>;
  /**
   * Each table the statement reads has one index only that its conditions can read by (a
   * unique key, or the one index of what it asks), and the rows it writes refer to unique keys:
   * without sequential scans its plan is the same whatever the values or the tables' size. On
   * PostgreSQL, in a transaction, each connection then plans it once and keeps the plan
   * (drivers.ts PLAN_ONCE); otherwise it is planned for each run's values. 'also alone': outside
   * a transaction too, in a transaction of its own planned once (drivers.ts `planned`), for a
   * statement whose planning costs more than the three statements around it (a read of claims).
   */
  planOnce?: PlanOnce;
  /**
   * A statement that holds nothing after it (a read, or a write that is a transaction of its
   * own): outside a transaction it goes in the round trip the statements of the same turn share
   * (sql.ts inSharedRoundTrip), one write on one connection for the requests served together,
   * where each took a connection and a write of its own. A read planned once 'also alone' may
   * run again after another's failure; a write never does.
   */
  sharesRoundTrip?: boolean;
}

/** A prepared query: run it, or take it compiled (`query`) to run with others (sql.ts `inOneRoundTrip`, `writeBehind`). */
export type Prepared<A extends unknown[], R> = ((db: Db, ...args: A) => Promise<QueryResult<R>>) & {
  query(db: Db, ...args: A): CompiledQuery<R>;
};

function valueAt(args: unknown[], { arg, key }: Slot): unknown {
  if (key === undefined) return args[arg];
  const value = (args[arg] as Record<string, unknown>)[key];
  if (value === undefined) throw new Error(`prepared query: column ${key} has no value (use null for none)`);
  return value;
}

/**
 * A prepared query for a row argument (`row`, by argument index) that sets any subset of
 * `optional` (an update or upsert writing only the fields given) beside the columns it always sets
 * (`always`): its SQL depends on which columns are given, so there is one prepared query per
 * subset, made when that subset is first run (at most 2^optional.length). A column whose value is
 * undefined is not given, as Kysely's builder leaves it out; a column neither optional nor always
 * set is refused rather than dropped unwritten.
 */
export function preparedPerColumnSet<C extends string, A extends unknown[], R>(
  build: (given: readonly C[]) => (db: Db, ...args: A) => Compilable<R>,
  { row, optional, always = [], planOnce = false, sharesRoundTrip = false }: { row: number; optional: readonly C[]; always?: readonly string[] } & Omit<PreparedOptions, 'rows'>,
): Prepared<A, R> {
  const known = new Set<string>([...optional, ...always]);
  const bySubset = new Map<string, Prepared<A, R>>();
  const preparedFor = (args: A): Prepared<A, R> => {
    const values = args[row] as Record<string, unknown>;
    for (const column of Object.keys(values)) {
      if (!known.has(column) && values[column] !== undefined) throw new Error(`prepared query: column ${column} is not one it writes`);
    }
    const given = optional.filter((c) => values[c] !== undefined);
    const key = given.join(',');
    let query = bySubset.get(key);
    if (!query) {
      query = prepared(build(given), { rows: { [row]: [...always, ...given] }, planOnce, sharesRoundTrip });
      bySubset.set(key, query);
    }
    return query;
  };
  return Object.assign(async (db: Db, ...args: A) => preparedFor(args)(db, ...args), { query: (db: Db, ...args: A) => preparedFor(args).query(db, ...args) });
}
