// Composes the Express app from the config and the areas. Everything a request needs is built
// here once; the process (src/main.ts) owns listening, signals and the database lifetime.
import express, { type Express, type Request, type RequestHandler } from 'express';
import type { Config } from './config.ts';
import type { Db } from './platform/db/index.ts';
import { createAgentArea } from './agent/index.ts';
import { createChainArea } from './chain/index.ts';
import { gatewayMounts } from './chain/gateway/router.ts';
import { DOCS_PATHS, docsRouter } from './platform/docs.ts';
import { healthRouter } from './platform/health.ts';
import { errorHandler, notFoundHandler, type ErrorShape } from './platform/http/errors.ts';
import { holdingRefusals, raiseHeldBodyFailure, requireContentTypeForBody } from './platform/http/body.ts';
import { rejectUnstorableInput } from './platform/http/input.ts';
import { isUnder, scopedRouter } from './platform/http/scope.ts';
import { ApiKeyService } from './platform/keys/service.ts';
import { requestLogger, type Logger } from './platform/logging.ts';
import { methodNotAllowedHandler, openApiRequestValidator } from './platform/openapi.ts';
import { createTwinsArea } from './twins/index.ts';
import { createUssdArea, type UssdTwinsPort } from './ussd/index.ts';
import { ussdTwinsPort } from './ussd/twins-port.ts';

export interface HearthDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Clock for date-dependent rules (fuel log days); tests move it. */
  now?: () => Date;
  /** Area B's view of area A; defaults to the one built from area A's services. */
  ussdTwins?: UssdTwinsPort;
}

/** What each area gets to build its routes and background work. */
export interface AreaContext extends HearthDeps {
  keys: ApiKeyService;
  /** Registers cleanup (timers, servers) run by Hearth.close(), in reverse order. */
  onClose(fn: () => Promise<void> | void): void;
}

export interface Hearth {
  app: Express;
  /** Stops the areas' background work; the database stays open (its owner closes it). */
  close(): Promise<void>;
}

/** True for paths of the chain gateway (area C), under any of its mounts. */
function chainPathTest(config: Config): (path: string) => boolean {
  const mounts = gatewayMounts(config);
  return (path) => mounts.some((p) => isUnder(path, p));
}

function errorShapeResolver(isChainPath: (path: string) => boolean): (req: Request) => ErrorShape {
  return (req) => {
    // Only the gateway's POST gets the USSD text shape; a wrong method is an ordinary 405.
    if (req.method === 'POST' && (req.path === '/api/ussd' || req.path === '/api/ussd/')) return 'ussd';
    if (isChainPath(req.path)) return 'cosmos';
    return 'problem';
  };
}

/** `handlers` for every request but those `skip` names. */
function unless(skip: (path: string) => boolean, handlers: RequestHandler[]): RequestHandler[] {
  return handlers.map((h) => (req, res, next) => (skip(req.path) ? next() : h(req, res, next)));
}

export async function createHearth(deps: HearthDeps): Promise<Hearth> {
  const { config, db, logger } = deps;
  const closers: (() => Promise<void> | void)[] = [];
  const ctx: AreaContext = { ...deps, keys: new ApiKeyService(db, { cacheTtlMs: config.API_KEY_CACHE_MS }), onClose: (fn) => closers.push(fn) };

  const twins = createTwinsArea(ctx);
  const ussd = await createUssdArea(ctx, deps.ussdTwins ?? ussdTwinsPort(twins, config.USSD_PRINCIPAL_DID, config.USSD_COLLECTION_ID), { now: deps.now });
  const agent = createAgentArea(ctx);
  // Last: it starts the embedded gRPC node, which nothing after it may leave running on a throw.
  const chain = await createChainArea(ctx);

  const app = express();
  app.disable('x-powered-by');
  // No generated ETags (nor the 304s they lead to): the contract documents conditional requests
  // only for evidence, whose route sets its own ETag.
  app.set('etag', false);
  // Paths are case-sensitive in the contract; '/V1/claims' is not a route (nor validated as one).
  app.enable('case sensitive routing');
  app.locals.chainGrpcPort = chain.grpcPort;
  // One trusted hop (the reverse proxy) so req.ip is the real client, never a spoofable header chain.
  app.set('trust proxy', config.TRUST_PROXY_ENABLED ? 1 : false);
  app.use(requestLogger(logger));
  // Rate limit and operator switch of area B come before body parsing and validation.
  app.use(ussd.gate);
  // Area C takes no bodies: a body sent there is ignored (and a POST is a 405), never parsed into
  // a 400. Elsewhere a refused body is reported only once the caller is authenticated.
  const isChainPath = chainPathTest(config);
  app.use(
    unless(isChainPath, [
      requireContentTypeForBody,
      express.json({ limit: config.BODY_LIMIT, type: ['application/json', 'application/*+json'] }),
      express.urlencoded({ extended: false, limit: config.BODY_LIMIT }),
    ].map(holdingRefusals)),
  );
  // Routes of plugins that are off answer 404 before the validator (which knows every documented route).
  app.use(agent.unloadedRoutesGuard);
  app.use(openApiRequestValidator(ctx.keys));
  app.use(raiseHeldBodyFailure);
  // After authentication too, like the body parsers' refusals.
  app.use(rejectUnstorableInput());
  const methodNotAllowed = methodNotAllowedHandler();
  // OPTIONS before the routers, which would answer it themselves (200 with Allow).
  app.use((req, res, next) => (req.method === 'OPTIONS' ? methodNotAllowed(req, res, next) : next()));

  app.use(scopedRouter(healthRouter(db, config), { paths: ['/health', '/'] }));
  app.use(scopedRouter(docsRouter(), { paths: DOCS_PATHS }));
  app.use(scopedRouter(twins.router, { prefixes: ['/v1'] }));
  app.use(scopedRouter(ussd.router, { prefixes: ['/api/ussd'] }));
  app.use(chain.router);
  app.use(agent.routers);

  app.use(methodNotAllowed);
  app.use(notFoundHandler);
  app.use(errorHandler(logger, errorShapeResolver(isChainPath)));

  return {
    app,
    async close() {
      for (const fn of closers.reverse()) await fn();
    },
  };
}
