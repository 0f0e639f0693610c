// Every request gets an answer within REQUEST_DEADLINE_MS: a request still unanswered then (its
// database calls each bounded by DB_QUERY_TIMEOUT_MS, but a handler may make several) gets 503
// with Retry-After in its area's shape. The handler's late answer is dropped by the error
// handler (headers already sent); its transaction commits or rolls back as a whole either way,
// and a retry with the same Idempotency-Key finds what committed.
// A request whose body is still arriving then is the client's delay, not Hearth's: 408, and the
// connection closes (what is left of the body is not waited for). One answered before its body
// arrived (a 401, say) is held no longer: Node would read the rest until HTTP_REQUEST_TIMEOUT_MS.
import type { RequestHandler } from 'express';
import { requestNotReceived, unavailable } from './errors.ts';

export function requestDeadline(ms: number): RequestHandler {
  return (req, res, next) => {
    const timer = setTimeout(() => {
      // Answered already: the rest of its body gets no second answer, and no more time.
      if (res.writableFinished) return req.socket.destroy();
      if (res.headersSent) return;
      if (req.complete) return next(unavailable(`The request was not answered within ${ms} ms; retry later.`));
      res.setHeader('Connection', 'close');
      next(requestNotReceived());
    }, ms);
    const clear = () => clearTimeout(timer);
    res.once('close', () => {
      if (req.complete || req.socket.destroyed) return clear();
      req.once('end', clear);
      req.socket.once('close', clear);
    });
    next();
  };
}
