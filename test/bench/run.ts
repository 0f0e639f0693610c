// `make bench`: autocannon against 127.0.0.1 only, bounded in time. Measures a bare Express 5
// handler as the baseline, then every case under test/bench/cases/, and prints req/s, p50/p99
// latency and each case's ratio to the baseline of the same run.
//   BENCH_DURATION (seconds per case, default 5), BENCH_WARMUP (uncounted seconds of load before
//   each case, default 3), BENCH_CONNECTIONS (default 50), BENCH_ONLY (substring filter on case names).
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchCase } from './case.ts';
import { connections, duration, measureHttp, startTarget, type Row } from './harness.ts';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.env.BENCH_ONLY;

interface CaseRow extends Row {
  ratio?: number;
  verdict?: string;
}

async function loadCases(): Promise<BenchCase[]> {
  const files = readdirSync(join(here, 'cases')).filter((f) => f.endsWith('.ts')).sort();
  const all: BenchCase[] = [];
  for (const f of files) all.push(...((await import(join(here, 'cases', f))) as { cases: BenchCase[] }).cases);
  return only ? all.filter((c) => c.name.includes(only)) : all;
}

const fmt = (n: number, w: number) => n.toFixed(n >= 100 ? 0 : 1).padStart(w);

async function main() {
  const cases = await loadCases();
  console.log(`Benchmark: ${connections} connections, ${duration}s per case, 127.0.0.1, node ${process.version}`);
  const baselineTarget = await startTarget('baseline');
  const baseline = await measureHttp('bare Express 5 baseline', { url: `http://127.0.0.1:${baselineTarget.port}/baseline` });
  baselineTarget.child.kill();

  const hearth = await startTarget('hearth');
  const target = { baseUrl: `http://127.0.0.1:${hearth.port}`, key: hearth.key! };
  const rows: CaseRow[] = [baseline];
  try {
    for (const c of cases) {
      const opts = await c.prepare(target);
      const row: CaseRow = await measureHttp(c.name, opts);
      row.ratio = row.rps / baseline.rps;
      const misses: string[] = [];
      if (c.targetRatio !== undefined && row.ratio < c.targetRatio) misses.push(`ratio < ${c.targetRatio}`);
      if (c.targetP99Ms !== undefined && row.p99 >= c.targetP99Ms) misses.push(`p99 >= ${c.targetP99Ms}ms`);
      if (row.errors || row.non2xx) misses.push(`${row.errors} errors, ${row.non2xx} non-2xx`);
      row.verdict = c.targetRatio !== undefined || c.targetP99Ms !== undefined ? (misses.length ? `MISS (${misses.join('; ')})` : 'meets target') : misses.join('; ');
      rows.push(row);
    }
  } finally {
    hearth.child.kill();
  }

  const w = Math.max(...rows.map((r) => r.name.length));
  console.log(`\n${'case'.padEnd(w)}  ${'req/s'.padStart(9)}  ${'p50 ms'.padStart(7)}  ${'p99 ms'.padStart(7)}  ${'ratio'.padStart(6)}  notes`);
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(w)}  ${fmt(r.rps, 9)}  ${fmt(r.p50, 7)}  ${fmt(r.p99, 7)}  ${(r.ratio === undefined ? 'base' : (r.ratio * 100).toFixed(0) + '%').padStart(6)}  ${r.verdict ?? ''}`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
