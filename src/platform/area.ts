// What an area (A twins, B USSD, C chain, D agent) is to the app. The app composes areas from
// this interface alone: it knows none of their paths, error shapes or rules, and an area adds
// a path, a gate or an error shape without touching the app.
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { Db } from './db/index.ts';
import type { ErrorRenderer } from './http/errors.ts';
import type { HandlerTable } from './http/handlers.ts';
import type { RateLimitStores } from './http/rate-limit.ts';
import type { RouterScope } from './http/scope.ts';
import type { ApiKeyService } from './keys/service.ts';
import type { Logger } from './logging.ts';

/** What each area gets to build its routes and background work. */
export interface AreaContext {
  config: Config;
  db: Db;
  logger: Logger;
  /** Clock for date-dependent rules (fuel log days); tests move it. */
  now?: () => Date;
  keys: ApiKeyService;
  /** The stores of the areas' rate limits (one Redis connection for all, with REDIS_URL). */
  rateLimitStores: RateLimitStores;
  /** Prometheus registry: each area registers its own metrics here. */
  metrics: Registry;
  /** Registers cleanup (timers, servers) run by Hearth.close(), in reverse order. */
  onClose(fn: () => Promise<void> | void): void;
}

/** A router and where it answers (whole paths, everything under prefixes); unscoped without either. */
export interface RouterMount extends RouterScope {
  router: RequestHandler;
}

export interface Area {
  /** Run before anything reads the request (rate limits, operator switches, guards). */
  gates?: RequestHandler[];
  /**
   * Run right after the operation is authenticated and before its body is read: rate limits
   * that count per API key (an ErrorRequestHandler among them sees the 401s and 403s).
   */
  rateLimits?: (RequestHandler | ErrorRequestHandler)[];
  /** Handlers of its contract operations by operationId (see http/handlers.ts), run for requests resolved and validated as that operation. */
  handlers?: HandlerTable;
  /** Routers of contract operations a handler object does not serve: each is reached only by requests resolved and validated as one. */
  routers?: RouterMount[];
  /** A router outside the OpenAPI contract, which parses and checks its own requests (area C). */
  uncontractedRouter?: RequestHandler;
  /** Path prefixes browsers may call when API_CORS_ORIGINS lists their origin. */
  browserPrefixes?: string[];
  /** Public path prefixes (no key, nothing private) any browser origin may call, whatever API_CORS_ORIGINS says. */
  publicPrefixes?: string[];
  /** How this area's requests are answered on error; undefined for a request not its own. */
  errorRendererFor?(req: Request): ErrorRenderer | undefined;
  /** The metrics label of one of its requests that resolved to no contract operation. */
  routeLabelFor?(req: Request): string | undefined;
  /** Error middleware run before the error is rendered (area B logs why a hop was refused). */
  errorObservers?: ErrorRequestHandler[];
}
