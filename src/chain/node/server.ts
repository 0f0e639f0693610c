// The embedded query node on the network: gRPC over HTTP/2 (cleartext) on GRPC_HOST:GRPC_PORT,
// so any gRPC client (grpcurl, cosmjs, another gateway) can query it.
import { createServer, type Http2Server } from 'node:http2';
import type { ConnectRouter } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { listenOn } from '../../platform/server.ts';
import { nodeErrorInterceptor } from './errors.ts';

export interface RunningNode {
  server: Http2Server;
  port: number;
  stop(): Promise<void>;
}

export async function startGrpcNode(routes: (router: ConnectRouter) => void, host: string, port: number): Promise<RunningNode> {
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  const server = createServer(connectNodeAdapter({ routes, grpc: true, connect: false, grpcWeb: false, interceptors: [nodeErrorInterceptor] }));
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  return {
    server,
    port: await listenOn(server, port, host, { host: 'GRPC_HOST', port: 'GRPC_PORT' }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Clients keep HTTP/2 sessions open; ask them to go away so close() can finish.
        for (const s of sessions) s.close();
      }),
  };
}
