// The HTTP/JSON gateway: one Express router answering under every configured prefix. It matches
// the path against the annotation-derived route table, builds the request message, calls the
// upstream node with a deadline and renders the answer as Cosmos JSON. CHAIN_GATEWAY_STYLE=v1
// (the default) answers at the edge as grpc-gateway v1 on a Cosmos node does (see cosmosEdge),
// but for a path no route has: 404 by default, v1's 501 with CHAIN_UNKNOWN_ROUTE_STATUS=501.
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { DescMethodUnary } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import type { Config } from '../../config.ts';
import { AppError, badRequest, errorHandler, notFound } from '../../platform/http/errors.ts';
import { requireApiKey } from '../../platform/http/auth.ts';
import { stopAtLimit } from '../../platform/http/body.ts';
import { cors } from '../../platform/http/cors.ts';
import type { ApiKeyService } from '../../platform/keys/service.ts';
import type { Logger } from '../../platform/logging.ts';
import { methodFullName, type GatewayStyle } from '../services.ts';
import { cosmosErrorRenderer, httpStatusForGrpc, renderErrorDetails, UNMARSHALABLE_ERROR_BODY } from './errors.ts';
import { sendGatewayJson, sendJsonText } from './reply.ts';
import { renderMessage } from './render.ts';
import { assertGoForm, buildRequest, RequestParseError } from './request.ts';
import { RouteTable } from './routes.ts';
import { cleanPath, decodeTargetPath, goEscapedPath } from '../../platform/http/request-target.ts';
import type { Upstream } from './upstream.ts';
import { unstorableForm } from '../../platform/http/input.ts';
import { caseSensitiveRouter, isUnder } from '../../platform/http/scope.ts';

export interface GatewayDeps {
  config: Config;
  keys: ApiKeyService;
  logger: Logger;
  routes: RouteTable;
  upstream: Upstream;
  disabled: ReadonlySet<string>;
}

/** Every prefix the gateway answers under: base path + protocol prefix, and each alias. */
export function gatewayMounts(config: Config): string[] {
  return [config.CHAIN_PREFIX, ...config.CHAIN_PREFIX_ALIASES].map((p) => config.CHAIN_BASE_PATH + p);
}

/**
 * The edge of grpc-gateway v1 behind gorilla/mux, as Cosmos nodes serve it, for every request
 * whose decoded path lies under a mount: a path that is not clean is answered 301 to the cleaned
 * one (when either is a gateway path), else the gateway serves the decoded path, so `%2F`
 * separates segments and a trailing slash leaves an empty last segment.
 */
export function cosmosEdge(mounts: readonly string[], gateway: RequestHandler): RequestHandler {
  const mountOf = (path: string) => mounts.find((m) => isUnder(path, m));
  // req.url, not originalUrl: mounted at the root it is the whole target, after any rewrite the
  // app made before routing (a normalised absolute-form target, say).
  return (req, res, next) => {
    const q = req.url.indexOf('?');
    const rawPath = q >= 0 ? req.url.slice(0, q) : req.url;
    // The request-target rule (app.ts) let through only paths that decode.
    const path = decodeTargetPath(rawPath)!;
    const mount = mountOf(path);
    // Cleaned as the request-target rule cleans a literal `..` (from Hearth's root): a path under
    // a mount that cleans to one outside it (`/chain/..%2Fhealth`) is redirected there too.
    const clean = cleanPath(path);
    if (clean !== path) {
      if (!mount && !mountOf(clean)) return next();
      res.status(301).setHeader('Location', `${goEscapedPath(clean)}${q >= 0 ? req.url.slice(q) : ''}`);
      res.end();
      return;
    }
    if (!mount) return next();
    res.locals.chainPath = path.slice(mount.length);
    gateway(req, res, next);
  };
}

/** v1: the decoded segments after the mount, as grpc-gateway v1 splits them (a trailing slash leaves ""). */
function v1Segments(rest: string): string[] {
  return rest === '' ? [] : rest.slice(1).split('/');
}

/** v2: decoded path segments after the mount point; a trailing slash adds nothing. */
function segmentsOf(req: Request): string[] {
  const raw = req.path.split('/').filter((s, i, all) => s !== '' || (i > 0 && i < all.length - 1));
  // The request-target rule (app.ts) let through only paths that decode, and so every segment does.
  return raw.map((s) => decodeURIComponent(s));
}

const FORM = 'application/x-www-form-urlencoded';

interface Dispatch {
  verb: string;
  /** The parameters: the query, after the form's when one was posted. */
  query: string;
  /** A form POST that may be served by another method's route (the path length fallback). */
  fallback: boolean;
  /** A form POST routed as its X-HTTP-Method-Override. */
  overridden: boolean;
}

/** The request as it came: its method, its URL's query, no rerouting (v2, and v1 but for a form POST). */
function plainDispatch(req: Request): Dispatch {
  const q = req.url.indexOf('?');
  return { verb: req.method, query: q >= 0 ? req.url.slice(q + 1) : '', fallback: false, overridden: false };
}

/**
 * grpc-gateway v1's path length fallback: a POST whose Content-Type is exactly the form type is
 * served by the route of another method (GET here) with the form as parameters, or, with
 * X-HTTP-Method-Override, as that method. Returns the method to route and the parameters
 * (Go's Request.Form: body values before query values; a body only when the method has one).
 */
function v1Dispatch(req: Request): Dispatch {
  const plain = plainDispatch(req);
  if (req.method !== 'POST' || req.headers['content-type'] !== FORM) return plain;
  const urlQuery = plain.query;
  const override = req.get('X-HTTP-Method-Override');
  const verb = override ? override.toUpperCase() : 'POST';
  if (!['POST', 'PUT', 'PATCH'].includes(verb)) return { verb, query: urlQuery, fallback: false, overridden: true };
  const body = typeof req.body === 'string' ? req.body : new URLSearchParams((req.body as Record<string, string> | undefined) ?? {}).toString();
  return { verb, query: [body, urlQuery].filter(Boolean).join('&'), fallback: verb === 'POST', overridden: !!override };
}

/** `parse()`, or a 400 with the parameters' errors. */
function parseOrRefuse<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof RequestParseError) throw badRequest(err.message, err.fieldErrors);
    throw err;
  }
}

function sendGrpcError(res: Response, err: ConnectError, retryAfterSeconds: number, style: GatewayStyle): void {
  const details = renderErrorDetails(err);
  if (!details) return sendJsonText(res, 500, UNMARSHALABLE_ERROR_BODY);
  const status = httpStatusForGrpc(err.code);
  if (status === 503) res.setHeader('Retry-After', String(retryAfterSeconds));
  sendGatewayJson(res, status, { code: err.code, message: err.rawMessage, details }, style);
}

export function gatewayRouter(deps: GatewayDeps): Router {
  const { config, keys, routes, upstream, disabled, logger } = deps;
  const router = caseSensitiveRouter();
  const v1 = config.CHAIN_GATEWAY_STYLE === 'v1';
  // A preflight offers only what the style's routes answer: v1 has no HEAD (501), as on a node.
  if (config.CHAIN_CORS_ORIGINS.length) router.use(cors({ origins: config.CHAIN_CORS_ORIGINS, methods: v1 ? ['GET'] : ['GET', 'HEAD'], allowHeaders: ['Authorization', 'Content-Type'] }));
  if (config.CHAIN_GATEWAY_AUTH === 'apikey') router.use(requireApiKey(keys, 'chain:read'));

  // Only v1 reads a body, and only a form posted for the path length fallback.
  if (v1) {
    router.use(stopAtLimit(express.text({ type: (req) => req.method === 'POST' && req.headers['content-type'] === FORM, limit: config.BODY_LIMIT }), config.BODY_LIMIT));
    // The app refused NUL in the query; a rerouted form is a query too.
    router.use((req, _res, next) => next(typeof req.body === 'string' ? unstorableForm(req.body) : undefined));
  }
  router.use(async (req, res) => {
    const dispatch = v1 ? v1Dispatch(req) : plainDispatch(req);
    const parts = v1 ? v1Segments(res.locals.chainPath as string) : segmentsOf(req);
    const { match: own, allowed } = routes.find(dispatch.verb, parts);
    const match = own ?? (dispatch.fallback ? routes.find('GET', parts).match : undefined);
    // grpc-gateway v1's mux parses the form of a request it reroutes itself (by its override, or
    // to another method's route), before any handler and before it answers "no route".
    if (dispatch.overridden || (match && !own)) parseOrRefuse(() => assertGoForm(dispatch.query));
    if (!match) {
      // A path no route has, whatever the method: the specification's 404 unless v1's 501 is asked for.
      const knownPath = allowed.length > 0;
      if (!knownPath && config.CHAIN_UNKNOWN_ROUTE_STATUS === '404') throw notFound('Not Found');
      // grpc-gateway v1 answers an unknown route and a wrong method alike (its ErrUnknownURI).
      if (v1 || !knownPath) throw new AppError(501, 'Not Implemented');
      throw new AppError(405, 'Method Not Allowed', { detail: `Method Not Allowed: use ${allowed.join(', ')}`, headers: { Allow: allowed.join(', ') } });
    }
    const method = match.route.method as DescMethodUnary;
    const name = methodFullName(method);
    if (disabled.has(name)) throw new AppError(501, 'Not Implemented', { detail: `method ${name} is disabled on this gateway` });
    const request = parseOrRefuse(() => buildRequest(method.input, match.vars, dispatch.query, config.CHAIN_GATEWAY_STYLE));
    try {
      const answer = await upstream.call(method, request);
      sendGatewayJson(res, 200, renderMessage(method.output, answer), config.CHAIN_GATEWAY_STYLE);
    } catch (err) {
      const ce = ConnectError.from(err);
      if (httpStatusForGrpc(ce.code) >= 500) logger.warn({ method: name, code: ce.code, err: ce.cause ?? ce.rawMessage }, 'chain upstream call failed');
      sendGrpcError(res, ce, config.RETRY_AFTER_SECONDS, config.CHAIN_GATEWAY_STYLE);
    }
  });
  // Errors in the Cosmos shape here, not by the app's path test: a v1 path may reach the gateway
  // only once decoded (/chain%2Fentity%2Fparams).
  const renderError = cosmosErrorRenderer(config.CHAIN_GATEWAY_STYLE);
  router.use(errorHandler(logger, { rendererFor: () => renderError, retryAfterSeconds: config.RETRY_AFTER_SECONDS }));
  return router;
}
