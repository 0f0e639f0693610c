// The embedded query node on the network: gRPC over HTTP/2 (cleartext) on GRPC_HOST:GRPC_PORT,
// so any gRPC client (grpcurl, cosmjs, another gateway) can query it. Its limits are a Cosmos
// node's (grpc-go): a request message of at most 4 MiB, unzipped too, and a call whose message is
// still arriving at its deadline (grpc-timeout, at most REQUEST_DEADLINE_MS) cut.
import { constants, createServer, type Http2Server, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import { Code, type ConnectRouter, type Interceptor } from '@connectrpc/connect';
import { parseTimeout } from '@connectrpc/connect/protocol-grpc';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { listenOn } from '../../platform/server.ts';
import { fillNonNullable } from '../gogo-options.ts';
import { nodeErrorInterceptor } from './errors.ts';

/** grpc-go's default limit on a received message, before and after decompression. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

export interface RunningNode {
  server: Http2Server;
  port: number;
  stop(): Promise<void>;
}

export interface NodeLimits {
  /** The longest a call's message may take to arrive, whatever its grpc-timeout asks (REQUEST_DEADLINE_MS). */
  deadlineMs: number;
}

/** A connection without a frame this long is closed (the HTTP server's keep-alive timeout). */
const IDLE_SESSION_MS = 65_000;

/** Answers carry their `nullable = false` messages even when empty, as a node's (gogo-marshalled) do. */
const nonNullableInterceptor: Interceptor = (next) => async (req) => {
  const res = await next(req);
  if (!res.stream) fillNonNullable(res.method.output, res.message);
  return res;
};

/**
 * A call whose message has not fully arrived at its deadline gets DEADLINE_EXCEEDED (trailers
 * only) and its stream is closed: a client that sends part of a message and stops holds nothing
 * open. Once the message is in, the handler's own deadlines (the database's) bound the rest.
 */
function cutAtDeadline(req: Http2ServerRequest, res: Http2ServerResponse, maxMs: number): void {
  const header = req.headers['grpc-timeout'];
  const asked = parseTimeout(typeof header === 'string' ? header : null, Number.MAX_SAFE_INTEGER).timeoutMs;
  const timer = setTimeout(() => {
    const { stream } = res;
    if (stream.destroyed || stream.closed) return;
    if (!stream.headersSent) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(Code.DeadlineExceeded), 'grpc-message': 'deadline exceeded' }, { endStream: true });
    }
    stream.close(constants.NGHTTP2_CANCEL);
  }, Math.min(asked ?? maxMs, maxMs));
  timer.unref();
  const done = () => clearTimeout(timer);
  req.once('end', done);
  res.once('close', done);
  // Answered before its message was all in (RESOURCE_EXHAUSTED): the client is told to stop
  // sending (RST_STREAM NO_ERROR, RFC 9113 §8.1) rather than held to the deadline.
  // (After the trailers: Node's response sends them from its own, earlier, wantTrailers listener.)
  res.stream.once('wantTrailers', () =>
    setImmediate(() => {
      if (!req.readableEnded && !res.stream.destroyed) res.stream.close(constants.NGHTTP2_NO_ERROR);
    }),
  );
}

/**
 * grpc-message as the gRPC HTTP/2 spec (and grpc-go, on a node) writes it: only bytes outside
 * 0x20-0x7E, and `%`, percent-encoded. Connect encodes every reserved character (`%2C` for a
 * comma), which grpc-js, decoding with decodeURI, shows as it is.
 */
export function grpcMessageOnTheWire(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/**
 * A status message of at most this many characters: a NOT_FOUND names the id asked for, and an
 * id of 70,000 characters made trailers too large for HTTP/2, so the call was reset without a status.
 */
const MAX_STATUS_MESSAGE = 500;

/** The response's trailers with grpc-message written as the spec does (grpcMessageOnTheWire), cut to MAX_STATUS_MESSAGE. */
function specEncodedMessages(res: Http2ServerResponse): void {
  const addTrailers = res.addTrailers.bind(res);
  res.addTrailers = (trailers) => {
    const message = trailers['grpc-message'];
    if (typeof message === 'string') {
      const text = decodeURIComponent(message);
      trailers['grpc-message'] = grpcMessageOnTheWire(text.length > MAX_STATUS_MESSAGE ? `${text.slice(0, MAX_STATUS_MESSAGE - 1)}…` : text);
    }
    addTrailers(trailers);
  };
}

export async function startGrpcNode(routes: (router: ConnectRouter) => void, host: string, port: number, limits: NodeLimits): Promise<RunningNode> {
  const sessions = new Set<ServerHttp2Session>();
  const handler = connectNodeAdapter({ routes, grpc: true, connect: false, grpcWeb: false, interceptors: [nodeErrorInterceptor, nonNullableInterceptor], readMaxBytes: MAX_MESSAGE_BYTES });
  const server = createServer((req, res) => {
    cutAtDeadline(req, res, limits.deadlineMs);
    specEncodedMessages(res);
    handler(req, res);
  });
  server.setTimeout(IDLE_SESSION_MS);
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
