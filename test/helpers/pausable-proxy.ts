// A TCP proxy in front of a real server that a test can freeze (bytes are held, connections
// stay open: what a SIGSTOPped PostgreSQL looks like to its clients), thaw, or take down (every
// connection cut, new ones refused). It names the local ports of its connections to the server,
// so a test can find their backends (pg_stat_activity.client_port) and terminate them.
//
// It also tells when a PostgreSQL server has finished with everything it was sent (quiet()):
// statements written during a freeze reach it after the thaw, after their caller has given up
// (pg's query_timeout fails the query but leaves the connection open; Knex ends it only when it
// next takes it from the pool). What clients send during a freeze is held by the proxy, not left
// unread in the kernel, so that it counts. A connection owes nothing once the server's last
// bytes end in ReadyForQuery. A client that leaves does not cut the server off: the server gets
// a FIN after the bytes already forwarded, and a backend runs every message it read before EOF,
// then exits, so the connection's close says the server is done with it.
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
  /** Settles once the server owes no open connection an answer (PostgreSQL's protocol). */
  quiet(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  /** Bytes came for the server since its last ReadyForQuery. */
  owes: boolean;
  /** What the client sent during a freeze, and whether it left then: passed on at the thaw. */
  held: Buffer[];
  left: boolean;
  /** The server's last 6 bytes, across chunks: a ReadyForQuery message is 'Z', length 5, status. */
  tail: Buffer;
}

const READY_FOR_QUERY = 0x5a;

export async function startPausableProxy(target: { host: string; port: number }): Promise<PausableProxy> {
  let frozen = false;
  const pairs = new Set<Pair>();
  let waiters: (() => void)[] = [];
  const settleQuiet = () => {
    if ([...pairs].some((p) => p.owes)) return;
    for (const resolve of waiters) resolve();
    waiters = [];
  };
  const onConnection = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    const pair: Pair = { client, upstream, owes: false, tail: Buffer.alloc(0), held: [], left: false };
    pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (upstream.destroyed) return;
      pair.owes = true;
      if (frozen) pair.held.push(chunk);
      else upstream.write(chunk);
    });
    const clientGone = () => {
      if (frozen) pair.left = true;
      else if (!upstream.destroyed) upstream.end();
    };
    client.on('error', clientGone);
    client.on('close', clientGone);
    upstream.on('data', (chunk: Buffer) => {
      pair.tail = Buffer.concat([pair.tail, chunk.subarray(-6)]).subarray(-6);
      if (pair.tail.length === 6 && pair.tail[0] === READY_FOR_QUERY && pair.tail.readInt32BE(1) === 5) pair.owes = false;
      if (!client.destroyed) client.write(chunk);
      settleQuiet();
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
      settleQuiet();
    };
    upstream.on('error', end);
    upstream.on('close', end);
    if (frozen) upstream.pause();
  };
  const destroyAll = () => {
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
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
      for (const { upstream } of pairs) upstream.pause();
    },
    thaw() {
      frozen = false;
      for (const pair of pairs) {
        const { upstream } = pair;
        if (upstream.destroyed) continue;
        for (const chunk of pair.held.splice(0)) upstream.write(chunk);
        if (pair.left) upstream.end();
        upstream.resume();
      }
    },
    async down() {
      destroyAll();
      await closeServer();
    },
    async up() {
      server = createServer(onConnection);
      await listen(port);
    },
    upstreamPorts() {
      return [...pairs].map(({ upstream }) => upstream.localPort).filter((p): p is number => p !== undefined);
    },
    quiet() {
      return new Promise<void>((resolve) => {
        waiters.push(resolve);
        settleQuiet();
      });
    },
    async close() {
      destroyAll();
      if (server.listening) await closeServer();
    },
  };
}
