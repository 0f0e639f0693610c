// Area C's error shape. gRPC status -> HTTP status for gateway answers (grpc-gateway's table,
// design note "Routing and errors"), and the reverse for errors raised by Hearth itself on a
// gateway path (a bad key, an outage), rendered as {"code", "message", "details"}.
import { create, createRegistry, fromBinary } from '@bufbuild/protobuf';
import { Code, type ConnectError } from '@connectrpc/connect';
import type { ErrorRenderer } from '../../platform/http/errors.ts';
import { file_google_rpc_error_details } from '../../../generated/proto/google/rpc/error_details_pb.ts';
import { QUERY_SERVICES, type GatewayStyle } from '../services.ts';
import { renderMessage, type Json } from './render.ts';
import { sendGatewayJson } from './reply.ts';

const HTTP_FOR_GRPC: Record<Code, number> = {
  [Code.Canceled]: 408,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export const httpStatusForGrpc = (code: Code): number => HTTP_FOR_GRPC[code] ?? 500;

/** gRPC status code for an HTTP status, for errors Hearth raises on a gateway path. */
export function grpcCodeForHttp(status: number): number {
  const table: Record<number, number> = {
    400: 3, 401: 16, 403: 7, 404: 5, 405: 12, 408: 1, 409: 10, 413: 11, 415: 3, 429: 8, 501: 12, 503: 14, 504: 4,
  };
  return table[status] ?? (status >= 500 ? 13 : 2);
}

/** Errors on a gateway path as the node's gateway answers them: the HTTP status, the gRPC code in the body. */
export const cosmosErrorRenderer =
  (style: GatewayStyle): ErrorRenderer =>
  (err, _req, res, headers) => {
    res.set(headers);
    sendGatewayJson(res, err.status, { code: grpcCodeForHttp(err.status), message: err.detail ?? err.title, details: [] }, style);
  };

/** Detail types a node's gateway can marshal: the standard google.rpc ones and the IXO messages. */
const DETAIL_TYPES = createRegistry(file_google_rpc_error_details, ...QUERY_SERVICES.map((s) => s.file));

/**
 * The details of an upstream error as grpc-gateway renders google.rpc.Status.details: each Any
 * as {"@type": ..., fields}. Undefined when one has a type the gateway does not know, which
 * grpc-gateway cannot marshal either.
 */
export function renderErrorDetails(err: ConnectError): Json[] | undefined {
  const out: Json[] = [];
  for (const detail of err.details) {
    const typeName = 'desc' in detail ? detail.desc.typeName : detail.type;
    const desc = DETAIL_TYPES.getMessage(typeName);
    if (!desc) return undefined;
    const message = 'desc' in detail ? create(detail.desc, detail.value) : fromBinary(desc, detail.value);
    out.push({ '@type': `type.googleapis.com/${typeName}`, ...renderMessage(desc, message) });
  }
  return out;
}

/** grpc-gateway's answer when it cannot marshal an error (DefaultHTTPProtoErrorHandler's fallback), byte for byte. */
export const UNMARSHALABLE_ERROR_BODY = '{"code": 13, "message": "failed to marshal error message"}';
