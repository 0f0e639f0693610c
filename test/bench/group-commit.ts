// What SQLite's group commit (inTransaction in src/platform/db/sql.ts) buys: the same small
// transactions (a read and an insert, as a claim's are), BENCH_CONNECTIONS in flight for
// BENCH_DURATION s, committed once through inTransaction and once each in a transaction of its own
// (Kysely's `db.transaction()`: BEGIN IMMEDIATE..COMMIT per call):
//   npx tsx test/bench/group-commit.ts
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb, type Db } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { connections, duration, latencyPercentiles, warmup, type Row } from './harness.ts';

/** One unit of work: reads a row, then stores a blob (about a claim's evidence in size). */
async function work(sql: Db): Promise<void> {
  await sql.selectFrom('kpt_collections').select('id').where('id', '=', 'default').executeTakeFirst();
  await sql
    .insertInto('twin_evidence_blobs')
    .values({ cid: randomBytes(16).toString('hex'), media_type: 'application/json', content: 'x'.repeat(2000), size: 2000, created_at: new Date().toISOString() })
    .execute();
}

async function measure(name: string, seconds: number, run: () => Promise<unknown>): Promise<Row> {
  const latencies: number[] = [];
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await run();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { name, rps: latencies.length / elapsed, ...latencyPercentiles(latencies), errors: 0, non2xx: 0 };
}

const dir = mkdtempSync(join(tmpdir(), 'hearth-bench-group-'));
const db = createDb({ url: `sqlite:${join(dir, 'bench.sqlite')}`, dataDir: dir, poolMax: 1 });
try {
  await migrateLatest(db);
  const cases: [string, () => Promise<unknown>][] = [
    ['transaction each (BEGIN IMMEDIATE..COMMIT)', () => db.transaction().execute(work)],
    ['inTransaction (group commit)', () => inTransaction(db, work)],
  ];
  const rows: Row[] = [];
  for (const [name, run] of cases) {
    await measure(name, warmup, run);
    rows.push(await measure(name, duration, run));
  }
  const base = rows[0]!.rps;
  console.log(`\nSQLite transactions, ${connections} in flight, ${duration} s each\n`);
  for (const r of rows) console.log(`${r.name.padEnd(45)} ${r.rps.toFixed(0).padStart(7)} tx/s  ${(r.rps / base).toFixed(2)}x  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms`);
} finally {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
}
