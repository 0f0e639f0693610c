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
 * connect-node reports a refused or reset connection as UNAVAILABLE or sometimes as INTERNAL/
 * UNKNOWN with a socket cause; for the client both mean "the node is not reachable".
 */
function asUpstreamError(err: unknown): ConnectError {
  const ce = ConnectError.from(err);
  const cause = (ce.cause ?? err) as { code?: string } | undefined;
  const socketCodes = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ERR_HTTP2_STREAM_CANCEL', 'ERR_HTTP2_SESSION_ERROR', 'ERR_HTTP2_GOAWAY_SESSION', 'ERR_HTTP2_INVALID_SESSION', 'ERR_HTTP2_STREAM_ERROR', 'EHOSTUNREACH', 'ENOTFOUND'];
  if ((ce.code === Code.Internal || ce.code === Code.Unknown || ce.code === Code.Canceled) && typeof cause?.code === 'string' && socketCodes.includes(cause.code)) {
    return new ConnectError(`upstream node unreachable: ${cause.code}`, Code.Unavailable);
  }
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
