// What the query node answers for a failure in its own code: a ConnectError as it is; a
// database that is out of reach or past its deadline as UNAVAILABLE (the gateway's 503 with
// Retry-After, which clients retry); anything else as INTERNAL, with no internals in the message.
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { isDatabaseUnavailable } from '../../platform/db/index.ts';

export function nodeError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (isDatabaseUnavailable(err)) return new ConnectError('the database is unavailable', Code.Unavailable, undefined, undefined, err);
  return new ConnectError('internal error', Code.Internal, undefined, undefined, err);
}

/** The same mapping for calls served over gRPC. */
export const nodeErrorInterceptor: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    throw nodeError(err);
  }
};
