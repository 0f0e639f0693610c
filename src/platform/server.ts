// Listening and graceful shutdown: stop accepting, let in-flight requests finish (bounded by
// SHUTDOWN_TIMEOUT_MS), stop the areas, then close the database.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import type { Express } from 'express';
import { answerUnreadableRequest } from './http/errors.ts';

export interface RunningServer {
  server: Server;
  port: number;
  stop(): Promise<void>;
}

/** Listens on host:port (0 = ephemeral); resolves with the bound port, rejects on EADDRINUSE & co. */
export async function listenOn(server: NetServer, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** How long a client may take to send a request's headers, and the whole request (body included). */
export interface ReceiveTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

export async function listen(
  app: Express,
  port: number,
  host: string,
  shutdownTimeoutMs: number,
  timeouts: ReceiveTimeouts = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 },
): Promise<RunningServer> {
  // Node waits 300 s for a slow body by default: a few slow clients would hold sockets that long.
  // Node checks those bounds only every connectionsCheckingInterval (30 s by default).
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, timeouts.headersTimeoutMs),
    },
    app,
  );
  // Keep-alive longer than typical load balancer idle timeouts avoids races on reused sockets.
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerUnreadableRequest);
  return {
    server,
    port: await listenOn(server, port, host),
    stop: () =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), shutdownTimeoutMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
