// Listening and graceful shutdown: stop accepting, let in-flight requests finish (bounded by
// SHUTDOWN_TIMEOUT_MS), stop the areas, then close the database.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import type { Express } from 'express';
import { invalidConfig } from '../config.ts';
import { answerUnreadableRequest, noteEarlyAnswers, refuseConnect } from './http/errors.ts';

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting and waits for in-flight requests; at the shutdown timeout cuts what is left, told to `onCut` first. */
  stop(onCut?: (openConnections: number) => void): Promise<void>;
}

/** The variables naming the address a server listens on: a failure to listen names them. */
export interface ListenVariables {
  host: string;
  port: string;
}

/** A failure to listen as the configuration error it is, naming the variable at fault; anything else as it is. */
function listenFailure(err: NodeJS.ErrnoException, vars: ListenVariables, host: string, port: number): Error {
  const code = err.code;
  if (code === 'EADDRINUSE') return invalidConfig(vars.port, `port ${port} is already in use on ${host}`);
  if (code === 'EACCES') return invalidConfig(vars.port, `port ${port} needs privileges this process does not have`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') return invalidConfig(vars.host, `${host} is not an address of this machine`);
  return err;
}

/**
 * Listens on host:port (0 = ephemeral); resolves with the bound port. A port in use or an address
 * not this machine's rejects with a ConfigError naming `vars`' variable.
 */
export async function listenOn(server: NetServer, port: number, host: string, vars: ListenVariables): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => reject(listenFailure(err, vars, host, port));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
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
      // Node would answer a missing Host, or an Expect it cannot meet, with a bare status line:
      // the app's header rules answer them in the area's shape (http/input.ts).
      requireHostHeader: false,
    },
    app,
  );
  server.on('checkExpectation', app);
  server.on('connect', refuseConnect);
  // Keep-alive longer than typical load balancer idle timeouts avoids races on reused sockets.
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerUnreadableRequest);
  server.on('request', noteEarlyAnswers);
  return {
    server,
    port: await listenOn(server, port, host, { host: 'HOST', port: 'PORT' }),
    stop: (onCut) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.getConnections((_err, open) => {
            onCut?.(open);
            server.closeAllConnections();
          });
        }, shutdownTimeoutMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
