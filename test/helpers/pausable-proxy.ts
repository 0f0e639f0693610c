// A TCP proxy in front of a real server that a test can freeze (bytes are held, connections
// stay open: what a SIGSTOPped PostgreSQL looks like to its clients), thaw, or take down
// (every connection cut, new ones refused). It names the local ports of its connections to the
// server, so a test can find their backends (pg_stat_activity.client_port) and terminate them.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface PausableProxy {
  port: number;
  freeze(): void;
  thaw(): void;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
  /** The local ports of the proxy's open connections to the server. */
  upstreamPorts(): number[];
}

export async function startPausableProxy(target: { host: string; port: number }): Promise<PausableProxy> {
  let frozen = false;
  const pairs = new Set<[Socket, Socket]>();
  const onConnection = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('data', (chunk) => {
        to.write(chunk);
      });
      from.on('error', end);
      from.on('close', end);
    }
    if (frozen) {
      client.pause();
      upstream.pause();
    }
  };
  let server: Server = createServer(onConnection);
  const listen = (port: number) => new Promise<number>((resolve) => server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  const port = await listen(0);
  const closeServer = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return {
    port,
    freeze() {
      frozen = true;
      for (const [a, b] of pairs) {
        a.pause();
        b.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const [a, b] of pairs) {
        a.resume();
        b.resume();
      }
    },
    async down() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await closeServer();
    },
    async up() {
      server = createServer(onConnection);
      await listen(port);
    },
    upstreamPorts() {
      return [...pairs].map(([, upstream]) => upstream.localPort).filter((p): p is number => p !== undefined);
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      if (server.listening) await closeServer();
    },
  };
}
