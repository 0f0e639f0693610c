// Body parsing rules beside Express's parsers, which run once the caller is authenticated.
import type { Socket } from 'node:net';
import type { NextFunction, RequestHandler, Response } from 'express';
import { payloadTooLarge } from './errors.ts';

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

/** How long a connection closed with the rest of a body unread lingers after its answer (Go waits 500 ms). */
const LINGER_MS = 500;

/**
 * Closes the connection after the answer (Connection: close) as Go's server does: FIN at once,
 * the socket closed LINGER_MS later. Node closes it at once (socket.destroySoon), and the bytes
 * still arriving then make the kernel reset the connection: a client still sending (curl) loses
 * the answer it was sent.
 */
function closeAfterAnswer(socket: Socket, res: Response): void {
  res.setHeader('Connection', 'close');
  socket.destroySoon = () => {
    socket.end();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };
}

/**
 * `parser` (an Express body parser given the same limit) answering 413 as soon as the body is
 * known to pass `limit` bytes: body-parser reads an over-limit body to its end before it answers
 * (100 MB, at the client's pace). A declared Content-Length over the limit is refused unread, and
 * a body sent without one as its bytes arrive; no more than `limit` bytes are received, encoded
 * (gzip) or not. The connection then closes, so the rest of the body is never read.
 */
export function stopAtLimit(parser: RequestHandler, limit: number): RequestHandler {
  return (req, res, next) => {
    let settled = false;
    let received = 0;
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) refuse();
    };
    // The parser's own answer to an over-limit body, once the body has ended, is not heard.
    const settle: NextFunction = (err?: unknown) => {
      if (settled) return;
      settled = true;
      req.off('data', count);
      next(err);
    };
    const refuse = () => {
      closeAfterAnswer(req.socket, res);
      settle(payloadTooLarge());
    };
    parser(req, res, settle);
    // A parser skips a request (not its type, no body) or refuses it at once; else it is reading.
    if (settled) return;
    if (Number(req.headers['content-length']) > limit) return refuse();
    // Counted beside the parser's own listener, added in the same tick: no chunk is missed.
    req.on('data', count);
  };
}
