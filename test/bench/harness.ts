// What every benchmark script shares: the bounds (BENCH_DURATION seconds per row,
// BENCH_CONNECTIONS in flight) and the target processes (test/bench/server.ts), each in a
// process of its own so the load generator never shares the server's event loop.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const here = dirname(fileURLToPath(import.meta.url));

export const duration = Number(process.env.BENCH_DURATION ?? 5);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** Seconds of the same load before each measured row, not counted: JIT compilation and lazily started threads settle first. */
export const warmup = Number(process.env.BENCH_WARMUP ?? 1);

export interface Target {
  child: ChildProcess;
  port: number;
  /** Hearth only: an API key with every scope, and the embedded gRPC node's port. */
  key?: string;
  grpcPort?: number;
}

export async function startTarget(mode: 'baseline' | 'hearth'): Promise<Target> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'server.ts'), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: process.env,
  });
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
  return { child, ...JSON.parse(line) };
}

/** One measured row: throughput, latency percentiles and failed requests. */
export interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
}

/** Runs autocannon against 127.0.0.1 with the harness's bounds: the warm-up, then the measured run. */
export async function measureHttp(name: string, opts: Partial<autocannon.Options>): Promise<Row> {
  if (warmup > 0) await autocannon({ connections, ...opts, duration: warmup } as autocannon.Options);
  const result = await autocannon({ connections, duration, ...opts } as autocannon.Options);
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}
