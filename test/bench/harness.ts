// What every benchmark script shares: the bounds (BENCH_DURATION seconds per row,
// BENCH_CONNECTIONS in flight) and the target processes (test/bench/server.ts), each in a
// process of its own so the load generator never shares the server's event loop.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';

const here = dirname(fileURLToPath(import.meta.url));

export const duration = Number(process.env.BENCH_DURATION ?? 5);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
/**
 * Seconds of the same load (on the same connections) before each measured row, not counted:
 * connections, JIT compilation and lazily started threads settle first. One second was not
 * enough: under claim submissions the second second still ran at p50 42-45 ms per quarter
 * second, against 26-28 ms from the third on (V8 still compiling on the same two cores).
 */
export const warmup = Number(process.env.BENCH_WARMUP ?? 3);

export interface Target {
  child: ChildProcess;
  port: number;
  /** Hearth only: an API key with every scope, and the embedded gRPC node's port. */
  key?: string;
  grpcPort?: number;
}

/** `env` overrides the target's environment (e.g. BENCH_DATABASE_URL for a PostgreSQL row). */
export function startTarget(mode: 'baseline' | 'hearth', env: NodeJS.ProcessEnv = {}): Promise<Target> {
  return startScript('server.ts', [mode], env);
}

/**
 * PostgreSQL at `url` behind a proxy adding BENCH_LATENCY_MS each way (latency-proxy.ts): the URL
 * to reach it through the proxy, and the proxy's process.
 */
export async function startLatencyProxy(url: string): Promise<{ url: string; child: ChildProcess }> {
  const target = new URL(url);
  const { child, port } = await startScript('latency-proxy.ts', [target.hostname, target.port || '5432']);
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  return { url: proxied.toString(), child };
}

/** Runs ANALYZE on the PostgreSQL database at `url`: the planner's statistics of every table as they are now. */
export async function analyzePostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

/** A bench script in its own process; it prints one JSON line once it is ready. */
async function startScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Target> {
  // BENCH_PROFILE=<dir>: each target writes a V8 CPU profile there when it ends (where its time goes).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', join(here, script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const mode = args[0] ?? script;
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
  return { child, ...JSON.parse(line) };
}

/**
 * CPU busy in a row's measured seconds, in cores (1 = one core all the time): the server under
 * test (Hearth's instances, every thread of them, or the baseline), PostgreSQL (its processes on
 * this machine) and this process (the load generator). Divided by req/s it is the CPU time each
 * spends on a request. A ratio to the baseline depends on how many cores a case can use, which it
 * shares with its database and its load; CPU per request does not. Read from Linux's /proc;
 * elsewhere it is not measured.
 */
export interface CpuCores {
  server: number;
  postgres: number;
  load: number;
}

/** Seconds of CPU each of them has used so far (the processes' user and system time). */
type CpuSeconds = CpuCores;

/** /proc's clock ticks a second (USER_HZ): 100 on every Linux Node runs on. */
const TICKS_PER_SECOND = 100;

/**
 * Command name and user + system seconds of a process and of its children it has reaped, from
 * /proc/<pid>/stat; undefined once it has exited. With the reaped children's, a PostgreSQL
 * backend that exits in a row (an idle pooled connection closed) moves its CPU to the postmaster
 * instead of taking it out of the sum.
 */
function processCpu(pid: string): { command: string; seconds: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may itself contain spaces or parentheses.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return { command: stat.slice(stat.indexOf('(') + 1, close), seconds: (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND };
}

function cpuSeconds(serverPids: number[]): CpuSeconds {
  const own = process.cpuUsage();
  let server = 0;
  let postgres = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const p = processCpu(pid);
    if (!p) continue;
    if (serverPids.includes(Number(pid))) server += p.seconds;
    else if (p.command === 'postgres') postgres += p.seconds;
  }
  return { server, postgres, load: (own.user + own.system) / 1e6 };
}

/** Where CPU can be read per process (Linux). */
const cpuReadable = (() => {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
})();

/** One measured row: throughput, latency percentiles and failed requests. */
export interface Row {
  name: string;
  /** Every counted response's latency in ms (for rows that add up several runs). */
  latencies?: number[];
  rps: number;
  p50: number;
  p99: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
  /** How many of the non-2xx answers had each status, so a failing row says what failed. */
  non2xxStatuses?: Record<number, number>;
  /** CPU busy in the measured seconds (see CpuCores), when measured. */
  cpu?: CpuCores;
}

/** p50 and p99 (nearest rank) of latencies in ms; 0 for none (the row then reports its errors). */
export function latencyPercentiles(latencies: number[]): { p50: number; p99: number } {
  const sorted = [...latencies].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
  return { p50: rank(50), p99: rank(99) };
}

/** Seconds a row may spend beyond warm-up and measurement waiting for its connections to open. */
const CONNECT_GRACE = 15;

/**
 * Runs autocannon against 127.0.0.1 with the harness's bounds. One run on one set of
 * connections: the measured seconds start once the warm-up is over and every connection has
 * had an answer, and only responses completed in them count. Two runs would not do: the
 * measured one would open its connections afresh, and a busy Node server accepts one new
 * connection per event-loop turn, so the first requests of the last connections would wait
 * behind the others (seen: 50 connections accepted over 4 s) and count in the row's p99 as a
 * start-up artefact, not as the latency of 50 connections in use.
 */
export async function measureHttp(name: string, opts: Partial<autocannon.Options>, cpuOf: { serverPids: number[] } = { serverPids: [] }): Promise<Row> {
  const wanted = opts.connections ?? connections;
  const latencies: number[] = [];
  const answered = new Set<unknown>();
  const non2xxStatuses: Record<number, number> = {};
  let startedAt = 0;
  let window: { from: number; to?: number } | undefined;
  const cpu: { from?: CpuSeconds; to?: CpuSeconds } = {};
  const windowEnds = () => {
    if (!window || window.to !== undefined) return;
    window.to = performance.now();
    if (cpuReadable) cpu.to = cpuSeconds(cpuOf.serverPids);
  };
  let stopAt: NodeJS.Timeout | undefined;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections: wanted, ...opts, duration: warmup + duration + CONNECT_GRACE } as autocannon.Options, (err, res) => {
      clearTimeout(stopAt);
      windowEnds();
      if (err) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(res);
    });
    instance.on('start', () => (startedAt = performance.now()));
    instance.on('response', (client, statusCode, _bytes, responseTime) => {
      if (!window) {
        answered.add(client);
        if (answered.size < wanted || performance.now() - startedAt < warmup * 1000) return;
        if (cpuReadable) cpu.from = cpuSeconds(cpuOf.serverPids);
        window = { from: performance.now() };
        stopAt = setTimeout(() => {
          windowEnds();
          instance.stop();
        }, duration * 1000);
        return;
      }
      if (window.to !== undefined) return;
      latencies.push(responseTime);
      if (statusCode < 200 || statusCode >= 300) non2xxStatuses[statusCode] = (non2xxStatuses[statusCode] ?? 0) + 1;
    });
  });
  const seconds = window ? (window.to! - window.from) / 1000 : 0;
  const busy = (k: keyof CpuCores) => (cpu.to![k] - cpu.from![k]) / seconds;
  return {
    name,
    latencies,
    rps: window ? latencies.length / seconds : 0,
    ...(cpu.from && cpu.to ? { cpu: { server: busy('server'), postgres: busy('postgres'), load: busy('load') } } : {}),
    ...latencyPercentiles(latencies),
    // Over the whole run, warm-up included, so no failure is left out; connections that never
    // answered count too.
    errors: result.errors + result.timeouts + (wanted - answered.size),
    non2xx: countOf(non2xxStatuses),
    non2xxStatuses,
  };
}

/** How many answers counts by status hold. */
export const countOf = (statuses: Record<number, number>) => Object.values(statuses).reduce((sum, n) => sum + n, 0);

/** The non-2xx answers of rows, added up by status. */
export function addStatuses(rows: Row[]): Record<number, number> {
  const sum: Record<number, number> = {};
  for (const r of rows) for (const [status, n] of Object.entries(r.non2xxStatuses ?? {})) sum[+status] = (sum[+status] ?? 0) + n;
  return sum;
}

/** "20 non-2xx (503: 18, 409: 2)". */
export function describeNon2xx(row: Row): string {
  const statuses = Object.entries(row.non2xxStatuses ?? {}).map(([status, n]) => `${status}: ${n}`);
  return `${row.non2xx} non-2xx${statuses.length ? ` (${statuses.join(', ')})` : ''}`;
}
