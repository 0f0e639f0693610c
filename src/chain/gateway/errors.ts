// gRPC status -> HTTP status for gateway answers (grpc-gateway's table, design note "Routing
// and errors"). The reverse direction for errors raised by the gateway itself lives in
// src/platform/http/errors.ts (grpcCodeForHttp).
import { Code } from '@connectrpc/connect';

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
