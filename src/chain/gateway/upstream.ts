// The node the gateway calls: the embedded query node (in-process) by default, or any node that
// speaks the same services over real gRPC (CHAIN_GRPC_URL). Every call has a deadline, so a
// slow or silent upstream becomes 504 instead of a hanging request.
import { create, type DescMessage, type DescMethodUnary, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createHandlerContext, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { nodeError } from '../node/errors.ts';
import type { ServiceBinding } from '../node/services.ts';

export interface Upstream {
  call(method: DescMethodUnary, request: MessageShape<DescMessage>): Promise<MessageShape<DescMessage>>;
  close(): void;
}

function withDeadline(transport: Transport, timeoutMs: number, close: () => void): Upstream {
  return {
    async call(method, request) {
      try {
        const res = await transport.unary(method, undefined, timeoutMs, undefined, request);
        return res.message;
      } catch (err) {
        throw asUpstreamError(err);
      }
    },
    close,
  };
}

/**
 * A refused, reset or dropped connection is "the node is not reachable" (UNAVAILABLE) for the
 * client, whatever connect-node reports: INTERNAL/UNKNOWN with a socket cause, or CANCELED for
 * an HTTP/2 stream reset by the peer (its message names the reset; a status the node itself
 * sends keeps its code). Only our deadline cancels calls, and that surfaces as DEADLINE_EXCEEDED.
 */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'ERR_HTTP2_SESSION_ERROR', 'ERR_HTTP2_GOAWAY_SESSION', 'ERR_HTTP2_INVALID_SESSION', 'ERR_HTTP2_STREAM_ERROR', 'ERR_HTTP2_STREAM_CANCEL']);

/**
 * A status code the node sent outside gRPC's table (99), which connect reports as INTERNAL
 * "invalid grpc-status": grpc-go, the client of a node's gateway, keeps any code that parses as
 * an int32 (strconv.ParseInt base 10), message included, and its gateway answers it 500 as is.
 */
function unlistedStatus(ce: ConnectError): ConnectError | undefined {
  const raw = ce.metadata.get('grpc-status');
  if (ce.code !== Code.Internal || raw === null || !/^[+-]?\d+$/.test(raw) || ce.rawMessage !== `invalid grpc-status: ${raw}`) return undefined;
  const code = Number(raw);
  if (code < -(2 ** 31) || code >= 2 ** 31) return undefined;
  return new ConnectError(decodeGrpcMessage(ce.metadata.get('grpc-message') ?? ''), code, ce.metadata);
}

/** grpc-message's percent-encoding undone as grpc-go does: byte by byte, a bad escape left as it is. */
const decodeGrpcMessage = (text: string): string =>
  Buffer.concat(text.split(/(%[0-9A-Fa-f]{2})/).map((part) => (/^%[0-9A-Fa-f]{2}$/.test(part) ? Buffer.from([parseInt(part.slice(1), 16)]) : Buffer.from(part)))).toString('utf8');

function asUpstreamError(err: unknown): ConnectError {
  const ce = ConnectError.from(err);
  const unlisted = unlistedStatus(ce);
  if (unlisted) return unlisted;
  if (ce.code === Code.DeadlineExceeded || ce.code === Code.Unavailable) return ce;
  const cause = (ce.cause ?? err) as { code?: unknown } | undefined;
  const socketFailure = typeof cause?.code === 'string' && SOCKET_CODES.has(cause.code);
  const streamReset = ce.rawMessage.startsWith('http/2 stream closed with error code');
  if (socketFailure || streamReset) return new ConnectError(`upstream node unreachable: ${socketFailure ? String(cause.code) : ce.rawMessage}`, Code.Unavailable);
  return ce;
}

/**
 * The embedded node, called in-process: the same service implementations the gRPC server runs,
 * without serialising each message to bytes and back, under the same deadline.
 */
export function embeddedUpstream(bindings: ServiceBinding[], timeoutMs: number): Upstream {
  // The node's handlers read nothing from their context (no headers, no cancellation), so one
  // context per method serves every call; building one per call costs more than the query.
  const handlers = new Map<string, (request: MessageShape<DescMessage>) => Promise<MessageInitShape<DescMessage>>>();
  for (const { service, impl } of bindings) {
    for (const m of service.methods) {
      const h = impl[m.localName];
      if (!h) continue;
      const ctx = createHandlerContext({ service, method: m, protocolName: 'in-process', requestMethod: 'POST', url: `/${service.typeName}/${m.name}` });
      handlers.set(`${service.typeName}/${m.name}`, (request) => h(request, ctx));
    }
  }
  return {
    async call(method, request) {
      const path = `${method.parent.typeName}/${method.name}`;
      const handler = handlers.get(path);
      if (!handler) throw new ConnectError(`${path} is not implemented`, Code.Unimplemented);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ConnectError('the deadline was exceeded', Code.DeadlineExceeded)), timeoutMs);
      });
      try {
        return create(method.output, await Promise.race([handler(request), deadline]));
      } catch (err) {
        // As the gRPC server does: no internals to the client; the cause is logged by the gateway.
        throw nodeError(err);
      } finally {
        clearTimeout(timer);
      }
    },
    close() {},
  };
}

export function grpcUpstream(baseUrl: string, timeoutMs: number): Upstream {
  const sessionManager = new Http2SessionManager(baseUrl, { idleConnectionTimeoutMs: 30_000 });
  const transport = createGrpcTransport({ baseUrl, sessionManager });
  return withDeadline(transport, timeoutMs, () => sessionManager.abort());
}
