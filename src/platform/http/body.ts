// Body parsing whose refusals wait for authentication. The parsers must run before the OpenAPI
// validator (it validates the parsed body), but a caller without a valid key should hear 401,
// not 400 for its malformed JSON: so a parser's refusal is held on the request and raised once
// the validator has authenticated it (or reported by the error handler in place of the
// validator's own complaint about the missing body).
import type { Request, RequestHandler } from 'express';

const heldFailures = new WeakMap<Request, unknown>();

/** `parser`, with its refusals of the request (4xx: malformed, too large, bad charset) held back. */
export function holdingRefusals(parser: RequestHandler): RequestHandler {
  return (req, res, next) =>
    parser(req, res, (err?: unknown) => {
      const status = (err as { status?: number } | undefined)?.status;
      if (status !== undefined && status >= 400 && status < 500) {
        heldFailures.set(req, err);
        return next();
      }
      next(err);
    });
}

/** The parser's refusal held for this request, if any. */
export function heldBodyFailure(req: Request): unknown {
  return heldFailures.get(req);
}

/** Mounted after the validator: a request that got this far (authenticated) hears its body's refusal. */
export const raiseHeldBodyFailure: RequestHandler = (req, _res, next) => next(heldFailures.get(req));

/**
 * 415 for a request that carries a body but no Content-Type: the parsers would skip it and the
 * handler would run as if no body had been sent. Mounted with the parsers (and held like them).
 */
export const requireContentTypeForBody: RequestHandler = (req, _res, next) => {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody || req.headers['content-type']) return next();
  next(Object.assign(new Error('The request has a body but no Content-Type; send Content-Type: application/json.'), { status: 415, type: 'content-type-missing' }));
};
