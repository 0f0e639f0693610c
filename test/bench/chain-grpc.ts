// The area C queries made directly with a gRPC client against the embedded node, next to the
// same queries through the HTTP gateway, in one run, so the gateway's own overhead shows:
//   npx tsx test/bench/chain-grpc.ts     (BENCH_DURATION s per row, BENCH_CONNECTIONS in flight)
// 127.0.0.1 only; the gRPC rows keep BENCH_CONNECTIONS unary calls in flight on one HTTP/2
// connection (how gRPC clients talk to a node) for a fixed time.
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ClaimsQuery, EntityQuery } from '../../src/chain/services.ts';
import { seedChainData } from './cases/chain.ts';
import { connections, duration, latencyPercentiles, measureHttp, startTarget, warmup, type Row } from './harness.ts';

/** Keeps `connections` calls in flight for `seconds`; tells each call's latency in ms, or undefined when it failed. */
async function keepCalling(seconds: number, call: () => Promise<unknown>, outcome: (ms: number | undefined) => void): Promise<void> {
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await call();
        outcome(performance.now() - t0);
      } catch {
        outcome(undefined);
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
}

async function grpcLoop(name: string, call: () => Promise<unknown>): Promise<Row> {
  // A warm-up on the same HTTP/2 connection, as the HTTP rows get theirs on the same connections.
  await keepCalling(warmup, call, () => {});
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  await keepCalling(duration, call, (ms) => (ms === undefined ? errors++ : latencies.push(ms)));
  const elapsed = (performance.now() - started) / 1000;
  return { name, rps: latencies.length / elapsed, ...latencyPercentiles(latencies), errors, non2xx: 0 };
}

async function main() {
  const { child, port, key, grpcPort } = await startTarget('hearth');
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const { entityDid } = await seedChainData({ baseUrl, key: key!, database: 'bench' });
    const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${grpcPort}` });
    const entity = createClient(EntityQuery, transport);
    const claims = createClient(ClaimsQuery, transport);
    console.log(`Chain gateway vs direct gRPC: ${connections} in flight, ${duration}s per row, 127.0.0.1, node ${process.version}`);
    const rows = [
      await measureHttp('HTTP GET /chain/entity/{id}', { url: `${baseUrl}/chain/entity/${entityDid}` }),
      await grpcLoop('gRPC ixo.entity.v1beta1.Query/Entity', () => entity.entity({ id: entityDid })),
      await measureHttp('HTTP GET /chain/claims/claims?pagination.limit=50', { url: `${baseUrl}/chain/claims/claims?pagination.limit=50` }),
      await grpcLoop('gRPC ixo.claims.v1beta1.Query/ClaimList limit 50', () => claims.claimList({ pagination: { limit: 50n } })),
    ];
    const w = Math.max(...rows.map((r) => r.name.length));
    console.log(`\n${'query'.padEnd(w)}  ${'req/s'.padStart(8)}  ${'p50 ms'.padStart(7)}  ${'p99 ms'.padStart(7)}  errors`);
    for (const r of rows) console.log(`${r.name.padEnd(w)}  ${r.rps.toFixed(0).padStart(8)}  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}  ${r.errors + r.non2xx}`);
  } finally {
    child.kill();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
