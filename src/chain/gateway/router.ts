// The HTTP/JSON gateway: one Express router mounted under every configured prefix. It matches
// the path against the annotation-derived route table, builds the request message, calls the
// upstream node with a deadline and renders the answer as Cosmos JSON.
import type { Request, RequestHandler, Response, Router } from 'express';
import type { DescMethodUnary } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import type { Config } from '../../config.ts';
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts';
import { requireApiKey } from '../../platform/http/auth.ts';
import type { ApiKeyService } from '../../platform/keys/service.ts';
import type { Logger } from '../../platform/logging.ts';
import { methodFullName } from '../services.ts';
import { httpStatusForGrpc } from './errors.ts';
import { renderMessage } from './render.ts';
import { buildRequest, RequestParseError } from './request.ts';
import { RouteTable } from './routes.ts';
import type { Upstream } from './upstream.ts';
import { caseSensitiveRouter } from '../../platform/http/scope.ts';

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

function cors(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  return (req, res, next) => {
    // Every answer depends on Origin (allowed or not), so a shared cache must key on it.
    res.vary('Origin');
    const origin = req.headers.origin;
    if (!origin || !(allowed.has(origin) || allowed.has('*'))) return next();
    res.setHeader('Access-Control-Allow-Origin', allowed.has('*') ? '*' : origin);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type');
      res.setHeader('Access-Control-Max-Age', '600');
      res.status(204).end();
      return;
    }
    next();
  };
}

/** Decoded path segments after the mount point; a trailing slash adds nothing. */
function segmentsOf(req: Request): string[] {
  const raw = req.path.split('/').filter((s, i, all) => s !== '' || (i > 0 && i < all.length - 1));
  try {
    return raw.map((s) => decodeURIComponent(s));
  } catch {
    throw badRequest('The path is not valid percent-encoding.');
  }
}

function sendGrpcError(res: Response, err: ConnectError, retryAfterSeconds: number): void {
  const status = httpStatusForGrpc(err.code);
  if (status === 503) res.setHeader('Retry-After', String(retryAfterSeconds));
  res.status(status).json({ code: err.code, message: err.rawMessage, details: [] });
}

export function gatewayRouter(deps: GatewayDeps): Router {
  const { config, keys, routes, upstream, disabled, logger } = deps;
  const router = caseSensitiveRouter();
  if (config.CHAIN_CORS_ORIGINS.length) router.use(cors(config.CHAIN_CORS_ORIGINS));
  if (config.CHAIN_GATEWAY_AUTH === 'apikey') router.use(requireApiKey(keys, 'chain:read'));

  router.use(async (req, res) => {
    const { match, allowed } = routes.find(req.method, segmentsOf(req));
    if (!match) {
      if (allowed.length) {
        throw new AppError(405, 'Method Not Allowed', { detail: `Method Not Allowed: use ${allowed.join(', ')}`, headers: { Allow: allowed.join(', ') } });
      }
      throw notFound('Not Found');
    }
    const method = match.route.method as DescMethodUnary;
    const name = methodFullName(method);
    if (disabled.has(name)) throw new AppError(501, 'Not Implemented', { detail: `method ${name} is disabled on this gateway` });
    let request;
    try {
      const q = req.originalUrl.indexOf('?');
      request = buildRequest(method.input, match.vars, q >= 0 ? req.originalUrl.slice(q + 1) : '');
    } catch (err) {
      if (err instanceof RequestParseError) throw badRequest(err.message, err.fieldErrors);
      throw err;
    }
    try {
      const answer = await upstream.call(method, request);
      res.json(renderMessage(method.output, answer));
    } catch (err) {
      const ce = ConnectError.from(err);
      if (httpStatusForGrpc(ce.code) >= 500) logger.warn({ method: name, code: ce.code, err: ce.cause ?? ce.rawMessage }, 'chain upstream call failed');
      sendGrpcError(res, ce, config.RETRY_AFTER_SECONDS);
    }
  });
  return router;
}
