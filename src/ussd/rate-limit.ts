// Area B's rate limits, in sliding windows of a minute:
//   - per client address (req.ip, which honours TRUST_PROXY): USSD_RATE_LIMIT_PER_MINUTE, 429
//     with Retry-After, for every caller but the telecom gateways;
//   - per phone number for hops from USSD_GATEWAY_ADDRESSES (all of a gateway's households
//     share its few addresses): USSD_PHONE_RATE_LIMIT_PER_MINUTE, answered 200 `END ...`, the
//     only answer a gateway shows to its user rather than dropping the session.
// With REDIS_URL the counters live in Redis so every instance shares them.
import type { Request, RequestHandler } from 'express';
import { rateLimit, type ClientRateLimitInfo, type Options, type Store } from 'express-rate-limit';
import proxyaddr from 'proxy-addr';
import { createClient } from 'redis';
import type { UssdRequest } from '../../generated/openapi/types.gen.ts';
import { invalidConfig, type Config } from '../config.ts';
import { sendUssdText } from './reply.ts';
import { SlidingWindowMemoryStore, SlidingWindowRedisStore } from '../platform/http/sliding-window.ts';
import type { Logger } from '../platform/logging.ts';
import { CATALOGUES, type Language } from './i18n/index.ts';

/** The rate-limit reply in English; the limits answer in USSD_DEFAULT_LANGUAGE. */
export const RATE_LIMIT_REPLY = `END ${CATALOGUES.en.failures.tooManyRequests}`;
export const REDIS_PREFIX = 'hearth:ussd:rl:';
const PHONE_REDIS_PREFIX = 'hearth:ussd:rl-phone:';
const REDIS_CONNECT_TIMEOUT_MS = 5000;

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

/** How often a Redis outage is logged while it lasts: its first failure, then one a minute. */
const OUTAGE_LOG_INTERVAL_MS = 60_000;

/**
 * A store whose failures let the request through (the limit fails open: a Redis outage must not
 * take the USSD service down with it), each logged as a line of the service's log, at most one a
 * minute; express-rate-limit's own passOnStoreError writes a stack to the console instead.
 */
class FailOpenStore implements Store {
  readonly localKeys: boolean;
  readonly prefix: string | undefined;
  private loggedAt = -Infinity;

  constructor(
    private readonly inner: Store,
    private readonly logger: Logger,
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
    this.logger.warn({ area: 'ussd', err: (err as Error)?.message }, 'USSD rate limit not counted: its store failed; hops go through uncounted');
  }
}

export interface UssdRateLimits {
  /** Before body parsing: every area B request but the gateways', per address. */
  perAddress: RequestHandler;
  /** On the hop route, after validation: the gateways' hops, per phone number. */
  perPhone: RequestHandler;
}

export async function ussdRateLimits(
  config: Pick<Config, 'USSD_RATE_LIMIT_PER_MINUTE' | 'USSD_PHONE_RATE_LIMIT_PER_MINUTE' | 'USSD_GATEWAY_ADDRESSES' | 'USSD_DEFAULT_LANGUAGE' | 'REDIS_URL'>,
  logger: Logger,
  onClose: (fn: () => Promise<void>) => void,
  /** The language of a hop's session, if this instance served it (the per-phone refusal is in it). */
  sessionLanguage: (sessionId: unknown) => Language | undefined = () => undefined,
): Promise<UssdRateLimits> {
  let storeFor = (_prefix: string): Store => new SlidingWindowMemoryStore();
  if (config.REDIS_URL) {
    // Without the offline queue a Redis outage fails the count at once (and FailOpenStore lets
    // the request through) instead of holding every USSD hop until Redis returns.
    const client = createClient({ url: config.REDIS_URL, disableOfflineQueue: true, socket: { connectTimeout: REDIS_CONNECT_TIMEOUT_MS } });
    client.on('error', (err: Error) => logger.error({ err: err.message }, 'redis error (USSD rate limit)'));
    await connectWithin(client, REDIS_CONNECT_TIMEOUT_MS);
    onClose(async () => {
      await client.close();
    });
    storeFor = (prefix) => new FailOpenStore(new SlidingWindowRedisStore((args) => client.sendCommand(args), prefix), logger);
  }
  const replyIn = (language: Language) => `END ${CATALOGUES[language].failures.tooManyRequests}`;
  // Counted before the body is read: the session, and so its language, is not known yet.
  const reply = replyIn(config.USSD_DEFAULT_LANGUAGE);
  const gateways = proxyaddr.compile(config.USSD_GATEWAY_ADDRESSES);
  const fromGateway = (req: Request) => config.USSD_GATEWAY_ADDRESSES.length > 0 && req.ip !== undefined && gateways(req.ip, 0);
  const common: Partial<Options> = {
    windowMs: 60_000,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    // X-Forwarded-For without TRUST_PROXY_ENABLED is expected (the header is then ignored on
    // purpose); the library would print a console warning for every such deployment.
    validate: { xForwardedForHeader: false },
  };
  const perAddress = rateLimit({
    ...common,
    limit: config.USSD_RATE_LIMIT_PER_MINUTE,
    store: storeFor(REDIS_PREFIX),
    skip: fromGateway,
    handler: (req, res, _next, options) => {
      if (req.method === 'POST' && (req.path === '/' || req.path === '')) sendUssdText(res, options.statusCode, reply);
      else res.status(options.statusCode).json({ error: 'Too many requests' });
    },
  });
  const perPhone = rateLimit({
    ...common,
    limit: config.USSD_PHONE_RATE_LIMIT_PER_MINUTE,
    store: storeFor(PHONE_REDIS_PREFIX),
    skip: (req) => !fromGateway(req),
    keyGenerator: (req) => (req.body as UssdRequest).phoneNumber,
    handler: (req, res) => {
      logger.warn({ area: 'ussd', gateway: req.ip }, 'ussd hop refused: phone over its rate limit');
      sendUssdText(res, 200, replyIn(sessionLanguage((req.body as UssdRequest).sessionId) ?? config.USSD_DEFAULT_LANGUAGE));
    },
  });
  return { perAddress, perPhone };
}
