// PostgreSQL: the plans statements prepared on a connection run on (EXPLAIN EXECUTE).
import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/index.ts';
import { prepared } from '../../src/platform/db/prepared.ts';

/**
 * In a transaction: EXPLAIN (`options`) of the one statement prepared on its connection whose text
 * is like `like`, run with `args` (SQL literals; by default null for each parameter: a plan made
 * once does not depend on them). The EXPLAIN goes out planned as `planOnce` says (drivers.ts
 * PLAN_ONCE), so it shows the plan such a statement keeps, or one made for these values.
 */
export async function explainPrepared(trx: Db, like: string, { planOnce, options = '', args }: { planOnce: boolean; options?: string; args?: string[] }): Promise<unknown[]> {
  const { rows } = await sql<{ name: string; n: number }>`select name, cardinality(parameter_types) as n from pg_prepared_statements where statement like ${like}`.execute(trx);
  if (rows.length !== 1) throw new Error(`${rows.length} prepared statements are like ${like}`);
  const { name, n } = rows[0]!;
  const text = `explain ${options} execute ${name}(${(args ?? Array<string>(n).fill('null')).join(', ')})`;
  const explain = prepared((db: Db) => ({ compile: () => sql.raw(text).compile(db) }), { planOnce });
  return (await explain(trx)).rows.map((r) => (r as { 'QUERY PLAN': unknown })['QUERY PLAN']);
}
