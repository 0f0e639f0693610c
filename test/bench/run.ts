// `make bench`: autocannon against 127.0.0.1 only, bounded in time. Measures a bare Express 5
// handler as the baseline, then every case under test/bench/cases/, and prints req/s, p50/p99
// latency and each case's ratio to the baseline of the same run.
//   BENCH_DURATION (seconds per case, default 5), BENCH_WARMUP (uncounted seconds of load before
//   each case, default 3), BENCH_CONNECTIONS (default 50), BENCH_ONLY (substring filter on case names).
// The cases run on SQLite (or BENCH_DATABASE_URL). With a PostgreSQL URL (BENCH_DATABASE_URL, else
// TEST_DATABASE_URL), every case runs again on it: on one instance, then on two instances of the
// same database sharing the connections (their aggregate throughput); then a new verified claim
// runs once more without, then with PostgreSQL behind a proxy adding 2 ms each way (a database on
// another host), on one and on two instances: claims that are not serialised keep most of their
// throughput there.
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type autocannon from 'autocannon';
import type { BenchCase, BenchTarget } from './case.ts';
import { addStatuses, analyzePostgres, connections, countOf, describeNon2xx, duration, latencyPercentiles, measureHttp, startLatencyProxy, startTarget, type Row, type Target } from './harness.ts';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.env.BENCH_ONLY;
const postgresUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;

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

const benchTarget = (t: Target, database: string) => ({ baseUrl: `http://127.0.0.1:${t.port}`, key: t.key!, database, pid: t.child.pid! });

/**
 * On PostgreSQL, the planner's statistics brought up to date once a case's data is stored, as
 * autovacuum does on a server that runs it (the test server has it off).
 */
async function statisticsUpdated(database: string): Promise<void> {
  if (database.startsWith('postgres')) await analyzePostgres(database);
}

/** The case's options once its data is stored and its statistics updated. */
async function prepared(c: BenchCase, target: BenchTarget): Promise<Partial<autocannon.Options>> {
  const options = await c.prepare(target);
  await statisticsUpdated(target.database);
  return options;
}

const CPU_WIDTH = 34;

/** CPU time per request of the server, the database and the load generator, and their sum (harness.ts CpuCores). */
function cpuPerRequest({ cpu, rps }: Row): string {
  if (!cpu || !rps) return '-';
  const ms = (cores: number) => ((cores * 1000) / rps).toFixed(3);
  return `${ms(cpu.server)} + ${ms(cpu.postgres)} + ${ms(cpu.load)} = ${ms(cpu.server + cpu.postgres + cpu.load)}`;
}

/** Ratio to the baseline and the verdict against the case's targets. */
function judge(c: BenchCase, row: CaseRow, baseline: Row): CaseRow {
  row.ratio = row.rps / baseline.rps;
  const misses: string[] = [];
  if (c.targetRatio !== undefined && row.ratio < c.targetRatio) misses.push(`ratio < ${c.targetRatio}`);
  if (c.targetP99Ms !== undefined && row.p99 >= c.targetP99Ms) misses.push(`p99 >= ${c.targetP99Ms}ms`);
  if (row.errors || row.non2xx) misses.push(`${row.errors} errors, ${describeNon2xx(row)}`);
  row.verdict = c.targetRatio !== undefined || c.targetP99Ms !== undefined ? (misses.length ? `MISS (${misses.join('; ')})` : 'meets target') : misses.join('; ');
  return row;
}

/** The same case on several instances at once, the connections split between them: one row of their sum. */
async function measureInstances(name: string, c: BenchCase, targets: ReturnType<typeof benchTarget>[]): Promise<CaseRow> {
  const options = await Promise.all(targets.map((t) => c.prepare(t)));
  // The instances share one database: its statistics are updated once.
  await statisticsUpdated(targets[0]!.database);
  const share = Math.ceil(connections / targets.length);
  // The runs' windows start and end together: the first one's CPU reading counts every instance.
  const everyInstance = { serverPids: targets.map((t) => t.pid) };
  const rows = await Promise.all(options.map((o, i) => measureHttp(`${name} #${i}`, { ...o, connections: share }, i === 0 ? everyInstance : undefined)));
  const latencies = rows.flatMap((r) => r.latencies ?? []);
  const non2xxStatuses = addStatuses(rows);
  return {
    name,
    rps: rows.reduce((sum, r) => sum + r.rps, 0),
    ...latencyPercentiles(latencies),
    errors: rows.reduce((sum, r) => sum + r.errors, 0),
    non2xx: countOf(non2xxStatuses),
    non2xxStatuses,
    ...(rows[0]!.cpu ? { cpu: rows[0]!.cpu } : {}),
  };
}

/** The cases on one, then on two instances of one PostgreSQL database. */
async function postgresRows(cases: BenchCase[], baseline: Row): Promise<CaseRow[]> {
  const env = { BENCH_DATABASE_URL: postgresUrl };
  const rows: CaseRow[] = [];
  const first = await startTarget('hearth', env);
  let second: Target | undefined;
  try {
    const one = benchTarget(first, postgresUrl!);
    for (const c of cases) rows.push(judge(c, await measureHttp(`${c.name} [PostgreSQL]`, await prepared(c, one), { serverPids: [one.pid] }), baseline));
    second = await startTarget('hearth', env);
    const two = [one, benchTarget(second, postgresUrl!)];
    for (const c of cases) rows.push(judge(c, await measureInstances(`${c.name} [PostgreSQL, 2 instances]`, c, two), baseline));
  } finally {
    first.child.kill();
    second?.child.kill();
  }
  return rows;
}

/** The case measured with PostgreSQL behind the latency proxy, each row noted with its share of the row before it. */
const LATENCY_CASE = 'POST /v1/claims (new verified claim)';

/**
 * The latency case on PostgreSQL without the proxy, then behind it on one and on two instances.
 * The rows before these have grown the database (every claim row's claims, events and census):
 * the row without the proxy is measured again here, next to the proxy's, on the same database as
 * it is now, so the share compares the proxy alone.
 */
async function latencyRows(cases: BenchCase[], baseline: Row): Promise<CaseRow[]> {
  const c = cases.find((k) => k.name === LATENCY_CASE);
  if (!c) return [];
  const proxy = await startLatencyProxy(postgresUrl!);
  const targets: Target[] = [];
  const rows: CaseRow[] = [];
  const note = (row: CaseRow, of: Row, what: string) => {
    row.verdict = [row.verdict, `${((row.rps / of.rps) * 100).toFixed(0)}% of ${what}`].filter(Boolean).join('; ');
    return row;
  };
  /** A new instance on `url`, measured as one row; the same database throughout, so its collections are prepared once. */
  const measureOne = async (name: string, url: string) => {
    const started = await startTarget('hearth', { BENCH_DATABASE_URL: url });
    targets.push(started);
    const one = benchTarget(started, postgresUrl!);
    return { one, row: judge(c, await measureHttp(name, await prepared(c, one), { serverPids: [one.pid] }), baseline) };
  };
  try {
    const direct = (await measureOne(`${c.name} [PostgreSQL, again next to the proxy's rows]`, postgresUrl!)).row;
    targets.pop()!.child.kill();
    rows.push(direct);
    const { one, row: single } = await measureOne(`${c.name} [PostgreSQL +2 ms each way]`, proxy.url);
    rows.push(note(single, direct, 'the row before, without the proxy'));
    targets.push(await startTarget('hearth', { BENCH_DATABASE_URL: proxy.url }));
    const two = [one, benchTarget(targets[1]!, postgresUrl!)];
    rows.push(note(judge(c, await measureInstances(`${c.name} [PostgreSQL +2 ms each way, 2 instances]`, c, two), baseline), single, 'one instance'));
  } finally {
    for (const t of targets) t.child.kill();
    proxy.child.kill();
  }
  return rows;
}

async function main() {
  const cases = await loadCases();
  console.log(`Benchmark: ${connections} connections, ${duration}s per case, 127.0.0.1, node ${process.version}, ${availableParallelism()} cores`);
  const baselineTarget = await startTarget('baseline');
  const baseline = await measureHttp('bare Express 5 baseline', { url: `http://127.0.0.1:${baselineTarget.port}/baseline` }, { serverPids: [baselineTarget.child.pid!] });
  baselineTarget.child.kill();

  const hearth = await startTarget('hearth');
  const target = benchTarget(hearth, process.env.BENCH_DATABASE_URL || 'sqlite');
  const rows: CaseRow[] = [baseline];
  try {
    for (const c of cases) rows.push(judge(c, await measureHttp(c.name, await prepared(c, target), { serverPids: [target.pid] }), baseline));
  } finally {
    hearth.child.kill();
  }
  if (postgresUrl && cases.length) {
    const postgres = await postgresRows(cases, baseline);
    rows.push(...postgres, ...(await latencyRows(cases, baseline)));
  }

  const w = Math.max(...rows.map((r) => r.name.length));
  console.log(`\n${'case'.padEnd(w)}  ${'req/s'.padStart(9)}  ${'p50 ms'.padStart(7)}  ${'p99 ms'.padStart(7)}  ${'ratio'.padStart(6)}  ${'CPU ms per request: server+db+load'.padEnd(CPU_WIDTH)}  notes`);
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(w)}  ${fmt(r.rps, 9)}  ${fmt(r.p50, 7)}  ${fmt(r.p99, 7)}  ${(r.ratio === undefined ? 'base' : (r.ratio * 100).toFixed(0) + '%').padStart(6)}  ${cpuPerRequest(r).padEnd(CPU_WIDTH)}  ${r.verdict ?? ''}`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
