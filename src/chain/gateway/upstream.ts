// The node the gateway calls: the embedded query node in-process by default, or any node that
// speaks the same services over real gRPC (CHAIN_GRPC_URL). Every call has a deadline, so a
// slow or silent upstream becomes 504 instead of a hanging request.
import type { DescMethodUnary, DescMessage, MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createRouterTransport, type ConnectRouter, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';

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

function asUpstreamError(err: unknown): ConnectError {
  const ce = ConnectError.from(err);
  if (ce.code === Code.DeadlineExceeded || ce.code === Code.Unavailable) return ce;
  const cause = (ce.cause ?? err) as { code?: unknown } | undefined;
  const socketFailure = typeof cause?.code === 'string' && SOCKET_CODES.has(cause.code);
  const streamReset = ce.rawMessage.startsWith('http/2 stream closed with error code');
  if (socketFailure || streamReset) return new ConnectError(`upstream node unreachable: ${socketFailure ? String(cause!.code) : ce.rawMessage}`, Code.Unavailable);
  return ce;
}

export function embeddedUpstream(register: (router: ConnectRouter) => void, timeoutMs: number): Upstream {
  return withDeadline(createRouterTransport(register), timeoutMs, () => {});
}

export function grpcUpstream(baseUrl: string, timeoutMs: number): Upstream {
  const sessionManager = new Http2SessionManager(baseUrl, { idleConnectionTimeoutMs: 30_000 });
  const transport = createGrpcTransport({ baseUrl, sessionManager });
  return withDeadline(transport, timeoutMs, () => sessionManager.abort());
}
