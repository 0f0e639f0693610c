// What every area's rate limits share: their stores (in this process, or in Redis with
// REDIS_URL so every instance shares one count; one Redis connection for all areas), the
// store that fails open on a Redis outage, and the per-key limit of areas A, C and D. Each area
// renders its 429 in its own error shape (the app's error handler, by the area's renderer).
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type ClientRateLimitInfo, type Options, type Store } from 'express-rate-limit';
import { createClient } from 'redis';
import { invalidConfig, type Config } from '../../config.ts';
import type { Logger } from '../logging.ts';
import { authenticatedKeyId } from './auth.ts';
import { AppError } from './errors.ts';
import { SlidingWindowMemoryStore, SlidingWindowRedisStore } from './sliding-window.ts';

/** Every limit counts in a sliding window of a minute (the variables are per minute). */
const RATE_LIMIT_WINDOW_MS = 60_000;

/** What every area's limiters share: the minute, the draft-8 RateLimit headers and nothing older. */
export const SLIDING_MINUTE = {
  windowMs: RATE_LIMIT_WINDOW_MS,
  standardHeaders: 'draft-8',
  legacyHeaders: false,
  // X-Forwarded-For without TRUST_PROXY_ENABLED is expected (the header is then ignored on
  // purpose); the library would print a console warning for every such deployment.
  validate: { xForwardedForHeader: false },
} as const satisfies Partial<Options>;
const REDIS_CONNECT_TIMEOUT_MS = 5000;
/** How often a Redis outage is logged while it lasts: its first failure, then one a minute. */
const OUTAGE_LOG_INTERVAL_MS = 60_000;

/** node-redis retries a refused connection forever; start-up instead fails with a clear message. */
async function connectWithin(client: { connect(): Promise<unknown>; destroy(): void }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(invalidConfig('REDIS_URL', `no Redis answered within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([client.connect(), timeout]);
  } catch (err) {
    client.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A store whose failures let the request through (the limit fails open: a Redis outage must not
 * take the service down with it), each logged as a line of the service's log, at most one a
 * minute; express-rate-limit's own passOnStoreError writes a stack to the console instead.
 */
class FailOpenStore implements Store {
  readonly localKeys: boolean;
  readonly prefix: string | undefined;
  private loggedAt = -Infinity;

  constructor(
    private readonly inner: Store,
    private readonly logger: Logger,
    private readonly outage: { area: string; message: string },
  ) {
    this.localKeys = inner.localKeys ?? false;
    this.prefix = inner.prefix;
  }

  init(options: Options): void | Promise<void> {
    return this.inner.init?.(options);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    try {
      return await this.inner.increment(key);
    } catch (err) {
      this.failed(err);
      return { totalHits: 0, resetTime: undefined };
    }
  }

  async decrement(key: string): Promise<void> {
    try {
      await this.inner.decrement(key);
    } catch (err) {
      this.failed(err);
    }
  }

  async resetKey(key: string): Promise<void> {
    try {
      await this.inner.resetKey(key);
    } catch (err) {
      this.failed(err);
    }
  }

  private failed(err: unknown): void {
    const now = Date.now();
    if (now - this.loggedAt < OUTAGE_LOG_INTERVAL_MS) return;
    this.loggedAt = now;
    this.logger.warn({ area: this.outage.area, err: (err as Error)?.message }, this.outage.message);
  }
}

/**
 * A new store for one limit: counters under `prefix` (a Redis key prefix, `hearth:<area>:rl:`),
 * and what to log, once a minute, while Redis is out of reach.
 */
export type RateLimitStores = (prefix: string, outage: { area: string; message: string }) => Store;

/** The stores of every limit: in this process, or with REDIS_URL in Redis (connected here, closed by `onClose`). */
export async function createRateLimitStores(config: Pick<Config, 'REDIS_URL'>, logger: Logger, onClose: (fn: () => Promise<void>) => void): Promise<RateLimitStores> {
  if (!config.REDIS_URL) return () => new SlidingWindowMemoryStore();
  // Without the offline queue a Redis outage fails the count at once (and FailOpenStore lets
  // the request through) instead of holding every request until Redis returns.
  const client = createClient({ url: config.REDIS_URL, disableOfflineQueue: true, socket: { connectTimeout: REDIS_CONNECT_TIMEOUT_MS } });
  client.on('error', (err: Error) => logger.error({ err: err.message }, 'redis error (rate limits)'));
  await connectWithin(client, REDIS_CONNECT_TIMEOUT_MS);
  onClose(async () => {
    await client.close();
  });
  return (prefix, outage) => new FailOpenStore(new SlidingWindowRedisStore((args) => client.sendCommand(args), prefix), logger, outage);
}

/** Seconds until the next place in the window frees up; at least 1 (the contract's Retry-After). */
function retryAfterSeconds(req: Request): number {
  const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
  return reset ? Math.max(1, Math.ceil((reset.getTime() - Date.now()) / 1000)) : RATE_LIMIT_WINDOW_MS / 1000;
}

/** 429 in the area's shape (the error handler renders it); the limiter has set Retry-After and the RateLimit headers. */
const tooManyRequests = () => new AppError(429, 'Too Many Requests', { type: 'rate-limited', detail: 'Too many requests; retry after the seconds in Retry-After.' });

export interface AreaRateLimit {
  /** Counts each of the area's requests: per API key once authenticated, per client address otherwise. */
  count: RequestHandler;
  /** Counts, per client address, each of the area's requests whose key was missing, unknown or short of a scope (401, 403). */
  countRefused: ErrorRequestHandler;
}

/**
 * One area's limit of `limit` requests a minute (sliding window) per API key, and per client
 * address (req.ip, which honours TRUST_PROXY) for requests that carry no valid key. RateLimit
 * and RateLimit-Policy (IETF draft ratelimit-headers-08) on every answer it counts; over it,
 * 429 with Retry-After. Store keys name a key by its id (`key:<id>`), never by its secret.
 */
export function areaRateLimit(opts: { area: string; limit: number; stores: RateLimitStores; applies: (req: Request) => boolean }): AreaRateLimit {
  const limiter = rateLimit({
    ...SLIDING_MINUTE,
    limit: opts.limit,
    store: opts.stores(`hearth:${opts.area}:rl:`, { area: opts.area, message: `${opts.area} rate limit not counted: its store failed; requests go through uncounted` }),
    skip: (req) => !opts.applies(req),
    keyGenerator: (req) => {
      const keyId = authenticatedKeyId(req);
      return keyId ? `key:${keyId}` : `ip:${ipKeyGenerator(req.ip ?? '')}`;
    },
    retryAfter: retryAfterSeconds,
    handler: (_req, _res, next) => next(tooManyRequests()),
  });
  return {
    count: limiter,
    countRefused: (err: { status?: unknown }, req, res, next) => {
      if ((err?.status !== 401 && err?.status !== 403) || !opts.applies(req)) return next(err);
      void limiter(req, res, (over?: unknown) => next(over ?? err));
    },
  };
}
