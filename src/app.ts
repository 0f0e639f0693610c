// Composes the Express app from the config and the areas. Everything a request needs is built
// here once; the process (src/main.ts) owns listening, signals and the database lifetime.
import express, { type Express, type Request, type RequestHandler } from 'express';
import { publicBaseUrl, type Config } from './config.ts';
import type { Db } from './platform/db/index.ts';
import { createAgentArea } from './agent/index.ts';
import { createChainArea } from './chain/index.ts';
import type { Area, AreaContext } from './platform/area.ts';
import { DOCS_PATHS, docsRouter } from './platform/docs.ts';
import { healthHandlers } from './platform/health.ts';
import { errorHandler, noRoute, notFoundHandler, type ErrorRenderer } from './platform/http/errors.ts';
import { requireContentTypeForBody, stopAtLimit } from './platform/http/body.ts';
import { operationDispatcher, type EveryOperation, type HandlerTable, type Handlers, type OperationsTagged } from './platform/http/handlers.ts';
import { authenticateOperation, operationOf, operationResolver, requestPointer } from './platform/http/operations.ts';
import { checkFormBody, checkJsonBody, rejectUnstorableInput, requestHeaderRules } from './platform/http/input.ts';
import { createRateLimitStores } from './platform/http/rate-limit.ts';
import { requestTargetRule } from './platform/http/request-target.ts';
import { requestContext } from './platform/http/request-context.ts';
import { cors } from './platform/http/cors.ts';
import { createMetrics, httpMetrics, metricsHandler, type RouteLabeller } from './platform/metrics.ts';
import { requestDeadline } from './platform/http/deadline.ts';
import { scopedRouter } from './platform/http/scope.ts';
import { ApiKeyService } from './platform/keys/service.ts';
import { requestLogger, type Logger } from './platform/logging.ts';
import { loadOpenApiDocument } from './platform/contract.ts';
import { contractOnly, methodNotAllowedHandler, openApiRequestValidator } from './platform/openapi.ts';
import { createTwinsArea } from './twins/index.ts';
import { createUssdArea, type UssdTwinsPort } from './ussd/index.ts';
import { ussdTwinsPort } from './ussd/twins-adapter.ts';
import type { agentHandlers } from './agent/routes.ts';
import type { userPreferencesHandlers } from './agent/plugins/user-preferences/routes.ts';
import type { eventHandlers } from './twins/events/routes.ts';
import type { twinsHandlers } from './twins/routes.ts';
import type { ussdHandlers } from './ussd/routes.ts';

// Every operation of the contract has its handler in one of the areas' objects (the user-preferences
// plugin's too, registered only while the plugin is on): `make typecheck` names any that has none.
type _EveryOperationHandled = EveryOperation<
  ReturnType<typeof healthHandlers> &
    { getMetrics: ReturnType<typeof metricsHandler> } &
    ReturnType<typeof twinsHandlers> &
    ReturnType<typeof eventHandlers> &
    ReturnType<typeof ussdHandlers> &
    ReturnType<typeof agentHandlers> &
    ReturnType<typeof userPreferencesHandlers>
>;

export interface HearthDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Clock for date-dependent rules (fuel log days); tests move it. */
  now?: () => Date;
  /** Area B's view of area A; defaults to the one built from area A's services. */
  ussdTwins?: UssdTwinsPort;
}

export interface Hearth {
  app: Express;
  /** Stops the areas' background work; the database stays open (its owner closes it). */
  close(): Promise<void>;
}

/** The first area that claims a request for its error shape, if any. */
function errorRendererOf(areas: readonly Area[]): (req: Request) => ErrorRenderer | undefined {
  return (req) => {
    for (const area of areas) {
      const renderer = area.errorRendererFor?.(req);
      if (renderer) return renderer;
    }
    return undefined;
  };
}

/** The metrics label of a request: its contract operation, else what its area calls it, else "unmatched". */
function routeLabeller(areas: readonly Area[]): RouteLabeller {
  return (req) => operationOf(req)?.template ?? areas.map((a) => a.routeLabelFor?.(req)).find((l) => l !== undefined) ?? 'unmatched';
}

/** `handlers` for requests resolved to an operation of the contract only. */
function onlyForOperations(handlers: RequestHandler[]): RequestHandler[] {
  return handlers.map((h) => (req, res, next) => (operationOf(req) ? h(req, res, next) : next()));
}

export async function createHearth(deps: HearthDeps): Promise<Hearth> {
  const { config, db, logger } = deps;
  const closers: (() => Promise<void> | void)[] = [];
  const onClose = (fn: () => Promise<void> | void) => void closers.push(fn);
  const ctx: AreaContext = {
    ...deps,
    keys: new ApiKeyService(db, { cacheTtlMs: config.API_KEY_CACHE_MS, staleIfErrorMs: config.API_KEY_STALE_IF_ERROR_MS }),
    metrics: createMetrics(db),
    onClose,
    rateLimitStores: await createRateLimitStores(config, logger, onClose),
  };

  const twins = await createTwinsArea(ctx);
  const ussd = await createUssdArea(ctx, deps.ussdTwins ?? ussdTwinsPort(twins, config.USSD_PRINCIPAL_DID, config.USSD_COLLECTION_ID), { now: deps.now });
  const agent = createAgentArea(ctx);
  // Last: it starts the embedded gRPC node, which nothing after it may leave running on a throw.
  const chain = await createChainArea(ctx, twins.reads);
  const areas: readonly Area[] = [twins, ussd, chain, agent];

  const app = express();
  app.disable('x-powered-by');
  // No generated ETags (nor the 304s they lead to): the contract documents conditional requests
  // only for evidence and status lists, whose routes set their own ETags.
  app.set('etag', false);
  // Paths are case-sensitive in the contract; '/V1/claims' is not a route (nor validated as one).
  app.enable('case sensitive routing');
  app.locals.chainGrpcPort = chain.grpcPort;
  // Only the listed proxies' X-Forwarded-For is believed: a client reaching Hearth directly is
  // taken at its own address, whatever header it sends.
  app.set('trust proxy', config.TRUST_PROXY_ENABLED ? config.TRUST_PROXY : false);
  app.use(requestContext);
  app.use(requestLogger(logger));
  // No answer of Hearth's is to be read as another type than it says (an SVG as HTML, say).
  app.use((_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  app.use(requestTargetRule);
  app.use(requestHeaderRules);
  app.use(requestDeadline(config.REQUEST_DEADLINE_MS));
  if (config.METRICS_ENABLED) app.use(httpMetrics(ctx.metrics, routeLabeller(areas)));
  const publicPrefixes = areas.flatMap((a) => a.publicPrefixes ?? []);
  // A wallet's script reads the validators (ETag) and, when it is limited, when to come back.
  const PUBLIC_EXPOSED_HEADERS = ['ETag', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'X-Request-Id'];
  if (publicPrefixes.length) {
    // What wallets and verifiers fetch from a browser: public, so open to every origin (no
    // credentials are sent with '*'); the rest of its area stays behind API_CORS_ORIGINS.
    app.use(publicPrefixes, cors({ origins: ['*'], methods: ['GET', 'HEAD', 'POST'], allowHeaders: ['Content-Type', 'If-None-Match'], exposeHeaders: PUBLIC_EXPOSED_HEADERS }));
  }
  const browserPrefixes = areas.flatMap((a) => a.browserPrefixes ?? []);
  if (config.API_CORS_ORIGINS.length && browserPrefixes.length) {
    const apiCors = cors({
      origins: config.API_CORS_ORIGINS,
      methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
      // MCP-Protocol-Version: an MCP client sends it on every request after initialize.
      allowHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id', 'traceparent', 'MCP-Protocol-Version'],
      exposeHeaders: ['Location', 'ETag', 'Idempotent-Replayed', 'Retry-After', 'X-Request-Id', 'traceparent', 'RateLimit', 'RateLimit-Policy', 'WWW-Authenticate'],
    });
    app.use(browserPrefixes, apiCors);
  }
  // The areas' gates (rate limits, operator switches, guards) come before anything reads the request.
  for (const area of areas) for (const gate of area.gates ?? []) app.use(gate);
  // The pipeline: resolve the operation (the one match), authenticate it, parse its body,
  // validate it with that operation's validator; the handler runs (contractOnly) only for what
  // was resolved and validated.
  // Area C is not in the OpenAPI document: it parses and checks its own requests.
  const contract = loadOpenApiDocument();
  app.use(operationResolver(contract));
  app.use(authenticateOperation(ctx.keys));
  // The limits counted per API key run here, after authentication, so the key is known; before
  // it they could only count per address, and every key behind one proxy would share a budget.
  // A request refused 401/403 is counted per address too (each area's error handler among its
  // rateLimits), so a flood without a valid key still meets the limit; its key lookup (one
  // indexed read, or none without a Bearer token) comes first. All of it before the body is read.
  for (const area of areas) for (const limit of area.rateLimits ?? []) app.use(limit);
  app.use(
    onlyForOperations([
      requireContentTypeForBody,
      stopAtLimit(express.json({ limit: config.BODY_LIMIT, type: ['application/json', 'application/*+json'], verify: checkJsonBody }), config.BODY_LIMIT),
      stopAtLimit(express.urlencoded({ extended: false, limit: config.BODY_LIMIT, verify: checkFormBody }), config.BODY_LIMIT),
    ]),
  );
  app.use(openApiRequestValidator(contract));
  app.use(rejectUnstorableInput());
  const methodNotAllowed = methodNotAllowedHandler(contract, DOCS_PATHS);
  // OPTIONS before the routers, which would answer it themselves (200 with Allow).
  app.use((req, res, next) => (req.method === 'OPTIONS' ? methodNotAllowed(req, res, next) : next()));

  // Static, public and outside the contract: the reference page and the contract itself.
  app.use(scopedRouter(docsRouter(publicBaseUrl(config), chain.openApiDocument), { paths: DOCS_PATHS }));
  // The platform's own operations; /metrics is no route while metrics are off.
  const handlers: HandlerTable = {
    ...healthHandlers(db, { appName: config.USSD_APP_NAME, environment: config.NODE_ENV, timeoutMs: config.DB_HEALTH_TIMEOUT_MS }),
    getMetrics: config.METRICS_ENABLED ? metricsHandler(ctx.metrics, config.METRICS_TOKEN) : ({ req }) => { throw noRoute(req); },
  } satisfies Handlers<OperationsTagged<'health'>>;
  for (const area of areas) Object.assign(handlers, area.handlers);
  app.use(contractOnly(operationDispatcher(handlers)));
  for (const area of areas) {
    for (const { router, ...scope } of area.routers ?? []) app.use(contractOnly(scope.paths || scope.prefixes ? scopedRouter(router, scope) : router));
    if (area.uncontractedRouter) app.use(area.uncontractedRouter);
  }

  app.use(methodNotAllowed);
  app.use(notFoundHandler);
  for (const area of areas) for (const observer of area.errorObservers ?? []) app.use(observer);
  app.use(
    errorHandler(logger, {
      rendererFor: errorRendererOf(areas),
      retryAfterSeconds: config.RETRY_AFTER_SECONDS,
      locateInput: (req) => (path) => requestPointer(operationOf(req), path),
    }),
  );

  return {
    app,
    async close() {
      for (const fn of closers.reverse()) await fn();
    },
  };
}
