// The one error path. Middleware and routes throw AppError (an HTTP status and problem fields);
// services throw DomainError (../domain-errors.ts), turned into an AppError here with pointers
// into the request. The app-level handler renders every error in the shape of the area the
// request belongs to (each area gives its ErrorRenderer: the USSD gateway's plain-text END reply,
// the chain gateway's gRPC-status JSON), else as RFC 9457 application/problem+json.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type { ProblemFieldError } from '../../../generated/openapi/types.gen.ts';
import { isDatabaseUnavailable } from '../db/index.ts';
import { DomainError, listedDetail, UnavailableError, type DomainErrorKind, type InputPath } from '../domain-errors.ts';
import { jsonPointer } from '../json-pointer.ts';
import type { Logger } from '../logging.ts';
import { requestContextOf } from './request-context.ts';

/** One failing field of a problem body (pointer into the request: /body/..., /query/..., /params/...). */
export type FieldError = ProblemFieldError;

export interface AppErrorOptions {
  detail?: string;
  errors?: FieldError[];
  headers?: Record<string, string>;
  /** Problem type slug; rendered as a URN so clients can switch on it. */
  type?: string;
  cause?: unknown;
  /** Extra members for the problem body (e.g. the stored resource on a conflict). */
  extensions?: Record<string, unknown>;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  readonly title: string;
  readonly detail?: string;
  readonly errors?: FieldError[];
  readonly headers: Record<string, string>;
  readonly type: string;
  readonly extensions?: Record<string, unknown>;

  constructor(status: number, title: string, opts: AppErrorOptions = {}) {
    super(opts.detail ?? title, { cause: opts.cause });
    this.status = status;
    this.title = title;
    this.detail = opts.detail;
    this.errors = opts.errors;
    this.headers = opts.headers ?? {};
    this.type = opts.type ?? slug(title);
    this.extensions = opts.extensions;
  }
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

/** The detail of a body that does not parse as JSON. */
export const NOT_JSON = 'The request body is not valid JSON.';
export const badRequest = (detail: string, errors?: FieldError[], type = 'validation-error') =>
  new AppError(400, 'Bad Request', { detail, errors, type });
export const unauthorized = (detail = 'A valid API key is required: send Authorization: Bearer <key>.') =>
  new AppError(401, 'Unauthorized', {
    detail,
    headers: { 'WWW-Authenticate': 'Bearer realm="hearth"' },
  });
export const forbidden = (detail: string) => new AppError(403, 'Forbidden', { detail });
/** 403 for a key without the scopes an operation needs, with RFC 6750's challenge naming them (§3.1 insufficient_scope). */
export const insufficientScope = (scopes: readonly string[]) =>
  new AppError(403, 'Forbidden', {
    detail: `This API key lacks the scope ${scopes.join(', ')}.`,
    headers: { 'WWW-Authenticate': `Bearer realm="hearth", error="insufficient_scope", scope="${scopes.join(' ')}"` },
  });
export const notFound = (detail: string) => new AppError(404, 'Not Found', { detail });
/** 413: a body over BODY_LIMIT, whoever noticed (body-parser, or http/body.ts before it). */
export const payloadTooLarge = () => new AppError(413, 'Payload Too Large', { detail: 'The request body is too large.' });
/** 503: the service cannot answer now (database out of reach, deadline passed); the error handler adds Retry-After. */
export const unavailable = (detail = 'The service is temporarily unavailable; retry later.', cause?: unknown) =>
  new AppError(503, 'Service Unavailable', { detail, cause, type: 'service-unavailable' });

const STATUS_OF_KIND: Record<DomainErrorKind, [status: number, title: string]> = {
  invalid: [400, 'Bad Request'],
  forbidden: [403, 'Forbidden'],
  'not-found': [404, 'Not Found'],
  conflict: [409, 'Conflict'],
  // RFC 9110's name (Node's table still says "Unprocessable Entity").
  unprocessable: [422, 'Unprocessable Content'],
};

/** Where an input path lies in the request (operations.ts `requestPointer`); by default, in the body. */
export type InputLocator = (path: InputPath) => string;
const inBody: InputLocator = (path) => `/body${jsonPointer(...path)}`;

/** A use case's refusal as an HTTP problem, its issues pointing into the request. */
export function domainToAppError(err: DomainError, locate: InputLocator = inBody): AppError {
  const [status, title] = STATUS_OF_KIND[err.kind];
  const errors = err.issues.map((i) => ({ pointer: locate(i.path), message: i.message, ...(i.rule ? { rule: i.rule } : {}) }));
  return new AppError(status, title, {
    detail: err.listIssues && errors.length ? listedDetail(err.summary, errors) : err.summary,
    errors: errors.length ? errors : undefined,
    type: err.type,
    extensions: err.extensions,
    cause: err,
  });
}

/** Normalises anything thrown into an AppError: ours, a use case's, the OpenAPI validator's, body-parser's. */
export function toAppError(err: unknown, locate?: InputLocator): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DomainError) return domainToAppError(err, locate);
  const e = err as {
    status?: number;
    statusCode?: number;
    type?: string;
    message?: string;
    errors?: { path?: string; message?: string; errorCode?: string }[];
    headers?: Record<string, string>;
  };
  const status = e?.status ?? e?.statusCode;
  if (e?.type === 'entity.parse.failed') {
    // body-parser takes only an object or array at the top: `null` or `1` is JSON, but no body here.
    const isJson = typeof (e as { body?: unknown }).body === 'string' && parsesAsJson((e as { body: string }).body);
    return badRequest(isJson ? 'The request body must be a JSON object.' : NOT_JSON, undefined, 'malformed-body');
  }
  if (isDatabaseUnavailable(err)) return unavailable(undefined, err);
  if (err instanceof UnavailableError) return unavailable(err.message, err);
  if (e?.type === 'entity.too.large') return payloadTooLarge();
  if (typeof status === 'number' && status >= 400 && status < 500 && Array.isArray(e.errors)) {
    // express-openapi-validator: path is like /body/fuelMeasurements/total
    const errors = e.errors.map((x) => ({
      pointer: x.path?.startsWith('/') ? x.path : `/${(x.path ?? '').replace(/^\./, '').replace(/\./g, '/')}`,
      message: x.message ?? 'is invalid',
      // Checks without an error code (an unknown query parameter) are rules of the contract itself.
      rule: x.errorCode?.replace(/\.openapi\.validation$/, '') ?? 'contract',
    }));
    return new AppError(status, STATUS_CODES[status] ?? 'Bad Request', {
      detail:
        status === 400
          ? listedDetail('The request does not match the API contract', errors)
          : e.message?.replace(/^unsupported media type undefined$/, 'unsupported media type: the request has no Content-Type'),
      errors: status === 400 ? errors : undefined,
      type: status === 400 ? 'validation-error' : undefined,
      headers: e.headers,
    });
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // body-parser's own errors (an unsupported charset or encoding) carry a machine type.
    return new AppError(status, STATUS_CODES[status] ?? 'Bad Request', { detail: e.message, type: e.type ? slug(e.type) : undefined });
  }
  return new AppError(500, 'Internal Server Error', { detail: 'An unexpected error occurred.', cause: err });
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The path of a request as it came (after the request-target rule), wherever a router is mounted. */
const requestPath = (req: Request) => req.originalUrl.split('?')[0]!;

export function problemBody(err: AppError, req: Request) {
  const ids = requestContextOf(req);
  return {
    type: `urn:hearth:problem:${err.type}`,
    title: err.title,
    status: err.status,
    ...(err.detail ? { detail: err.detail } : {}),
    instance: requestPath(req),
    ...(err.errors?.length ? { errors: err.errors } : {}),
    ...(err.extensions ?? {}),
    ...(ids ? { requestId: ids.requestId, traceId: ids.traceId } : {}),
  };
}

/**
 * Writes an error in one area's shape. `headers` are the error's own (WWW-Authenticate,
 * Allow, Retry-After on a 503): a shape that answers in HTTP terms sends them.
 */
export type ErrorRenderer = (err: AppError, req: Request, res: Response, headers: Record<string, string>) => void;

/** RFC 9457 application/problem+json: areas A and D, and anything no area claims. */
export const renderProblem: ErrorRenderer = (err, req, res, headers) => {
  res.set(headers).status(err.status).type('application/problem+json').send(JSON.stringify(problemBody(err, req)));
};

/**
 * The app-level error handler. `rendererFor` gives the shape of the area a request belongs to
 * (resolved by path, as the error may come before any area's router); problem+json otherwise.
 */
export function errorHandler(
  logger: Logger,
  opts: { rendererFor?: (req: Request) => ErrorRenderer | undefined; retryAfterSeconds?: number; locateInput?: (req: Request) => InputLocator } = {},
): ErrorRequestHandler {
  const retryAfter = String(opts.retryAfterSeconds ?? 5);
  return (err, req, res, _next) => {
    const appErr = toAppError(err, opts.locateInput?.(req));
    // 501 answers a request for what Hearth does not serve (a Cosmos route, say): not a failure.
    if (appErr.status >= 500 && appErr.status !== 501) logger.error({ err: appErr.cause ?? err, path: req.path, requestId: requestContextOf(req)?.requestId }, 'request failed');
    if (res.headersSent) return;
    const headers = appErr.status === 503 && !appErr.headers['Retry-After'] && !res.hasHeader('Retry-After') ? { ...appErr.headers, 'Retry-After': retryAfter } : appErr.headers;
    (opts.rendererFor?.(req) ?? renderProblem)(appErr, req, res, headers);
  };
}

/**
 * 404 for a request no route answers, naming its whole path (in a router mounted on a path,
 * req.path is only the rest of it). `why` is said after the path.
 */
export const noRoute = (req: Request, why?: string) => notFound(`No route for ${req.method} ${requestPath(req)}${why ? `: ${why}` : ''}.`);

/** 404 for anything no router answered; rendered by errorHandler in the area's shape. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(noRoute(req));
};

/** 408: the client did not send the whole request in time. */
export const requestNotReceived = () => new AppError(408, 'Request Timeout', { detail: 'The request was not received in time.' });

/** What Node's HTTP parser could not read, by its error code: the status, and why. */
function unreadableRequest(code: string | undefined): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') return new AppError(431, 'Request Header Fields Too Large', { detail: 'The request headers are too large.' });
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return new AppError(413, 'Content Too Large', { detail: 'The request has too large chunk extensions.' });
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return requestNotReceived();
  return new AppError(400, 'Bad Request', { type: 'unreadable-request', detail: 'The request is not valid HTTP/1.1 (its request line, a header or its framing).' });
}

/** Connections whose request in progress was answered before all of it arrived (a 401 before its body, say). */
const answeredEarly = new WeakSet<Duplex>();

/**
 * The http.Server 'request' listener beside answerUnreadableRequest: a response finished before
 * its request was all received marks the connection until the rest arrives, so the rest failing
 * (too slow: Node's 408) gets no second response to the one request (RFC 9112 §9.3).
 */
export function noteEarlyAnswers(req: IncomingMessage, res: ServerResponse): void {
  res.once('finish', () => {
    if (req.complete) return;
    answeredEarly.add(req.socket);
    req.once('end', () => answeredEarly.delete(req.socket));
  });
}

/**
 * The http.Server 'clientError' listener: a request Node's parser cannot read reaches no area,
 * so it is answered as problem+json (not Node's bare status line), and the connection closes as
 * Node closes it. Nothing is written once a response to the request has begun or been sent.
 */
export function answerUnreadableRequest(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!inFlight?.headersSent && !answeredEarly.has(socket)) writeProblem(socket, unreadableRequest(err.code));
  socket.destroy();
}

/**
 * The http.Server 'connect' listener: Hearth is no proxy, so CONNECT (which Node hands over as a
 * bare connection, no route seeing it) is 501 problem+json (RFC 9110 §15.6.2: a method the
 * server does not implement), and the connection closes.
 */
export function refuseConnect(_req: IncomingMessage, socket: Duplex): void {
  if (socket.writable) writeProblem(socket, new AppError(501, 'Not Implemented', { detail: 'CONNECT is not served: Hearth is no proxy.' }));
  socket.destroy();
}

/** A problem written on a connection no response object holds, which then closes. */
function writeProblem(socket: Duplex, problem: AppError): void {
  const body = JSON.stringify({ type: `urn:hearth:problem:${problem.type}`, title: problem.title, status: problem.status, detail: problem.detail });
  socket.write(
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
