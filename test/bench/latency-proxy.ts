// A TCP proxy that delays every chunk by BENCH_LATENCY_MS (default 2) each way: PostgreSQL as if
// on another host. Its own process, so its timers do not share an event loop with the load
// generator or the server. Usage: tsx test/bench/latency-proxy.ts <host> <port>; prints
// {"port": n} once it listens, and stops on SIGTERM.
import { connect, createServer } from 'node:net';

const [host = '127.0.0.1', port = '5432'] = process.argv.slice(2);
const delayMs = Number(process.env.BENCH_LATENCY_MS ?? 2);

const server = createServer((client) => {
  const upstream = connect(Number(port), host);
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
    // Timers of one delay fire in the order they were set: the bytes keep their order.
    from.on('data', (chunk) => setTimeout(() => to.write(chunk), delayMs));
    from.on('error', end);
    from.on('close', () => setTimeout(end, delayMs));
  }
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as { port: number }).port })));
process.once('SIGTERM', () => process.exit(0));
