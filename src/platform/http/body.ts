// Body parsing rules beside Express's parsers, which run once the caller is authenticated.
import type { RequestHandler } from 'express';

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
