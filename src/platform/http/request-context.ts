// Request ids and W3C trace context, so one request can be followed from a partner's client
// through Hearth's logs to the answer it got:
//   - X-Request-Id: the caller's, when it is a short token, else a new UUID; echoed on every
//     answer, logged, and put in problem bodies (requestId);
//   - traceparent (W3C Trace Context level 1): a valid one keeps its trace id, and the answer
//     carries Hearth's own span in that trace; without one, Hearth starts a trace. The trace id
//     is logged and put in problem bodies (traceId).
import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';

export interface RequestContext {
  requestId: string;
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const contexts = new WeakMap<Request, RequestContext>();

/** What a caller may choose as its request id: printable, no spaces, at most 128 characters. */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
/** version 00; trace-id and parent-id not all zeros (W3C Trace Context §3.2.2). */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZEROS = /^0+$/;

export function parseTraceparent(header: string | undefined): { traceId: string; sampled: boolean } | undefined {
  const m = header ? TRACEPARENT.exec(header.trim()) : null;
  if (!m || ZEROS.test(m[1]!) || ZEROS.test(m[2]!)) return undefined;
  return { traceId: m[1]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 };
}

export const requestContext: RequestHandler = (req, res, next) => {
  const given = req.headers['x-request-id'];
  // randomUUID draws from a buffered entropy pool: cheaper per request than randomBytes. Its
  // 122 random bits make a trace id, and 64 of them a span id.
  const hexUuid = () => randomUUID().replace(/-/g, '');
  const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
  const parent = parseTraceparent(typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined);
  const ctx: RequestContext = {
    requestId,
    traceId: parent?.traceId ?? hexUuid(),
    spanId: hexUuid().slice(16),
    sampled: parent?.sampled ?? false,
  };
  contexts.set(req, ctx);
  res.setHeader('X-Request-Id', ctx.requestId);
  res.setHeader('traceparent', `00-${ctx.traceId}-${ctx.spanId}-${ctx.sampled ? '01' : '00'}`);
  next();
};

/** The request's ids; undefined only for requests that did not pass requestContext. */
export function requestContextOf(req: Request): RequestContext | undefined {
  return contexts.get(req);
}
