// Area B's rate limit: USSD_RATE_LIMIT_PER_MINUTE per client address (req.ip, which honours
// TRUST_PROXY_ENABLED), 429 with Retry-After. With REDIS_URL the counters live in Redis so
// every instance shares them.
import type { RequestHandler } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { createClient } from 'redis';
import { ConfigError, type Config } from '../config.ts';
import { sendUssdText } from '../platform/http/errors.ts';
import type { Logger } from '../platform/logging.ts';

export const RATE_LIMIT_REPLY = 'END Too many requests. Please try again in a minute.';
export const REDIS_PREFIX = 'hearth:ussd:rl:';
const REDIS_CONNECT_TIMEOUT_MS = 5000;

/** node-redis retries a refused connection forever; start-up instead fails with a clear message. */
async function connectWithin(client: { connect(): Promise<unknown>; destroy(): void }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConfigError(`Invalid configuration:\n  REDIS_URL: no Redis answered within ${ms} ms`)), ms);
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

export async function ussdRateLimit(
  config: Pick<Config, 'USSD_RATE_LIMIT_PER_MINUTE' | 'REDIS_URL'>,
  logger: Logger,
  onClose: (fn: () => Promise<void>) => void,
): Promise<RequestHandler> {
  let store: Store | undefined;
  if (config.REDIS_URL) {
    // Without the offline queue a Redis outage fails the count at once (and passOnStoreError
    // lets the request through) instead of holding every USSD hop until Redis returns.
    const client = createClient({ url: config.REDIS_URL, disableOfflineQueue: true, socket: { connectTimeout: REDIS_CONNECT_TIMEOUT_MS } });
    client.on('error', (err: Error) => logger.error({ err: err.message }, 'redis error (USSD rate limit)'));
    await connectWithin(client, REDIS_CONNECT_TIMEOUT_MS);
    onClose(async () => {
      await client.close();
    });
    store = new RedisStore({ prefix: REDIS_PREFIX, sendCommand: (...args: string[]) => client.sendCommand(args) });
  }
  return rateLimit({
    windowMs: 60_000,
    limit: config.USSD_RATE_LIMIT_PER_MINUTE,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    store,
    // A Redis outage must not take the USSD service down with it.
    passOnStoreError: true,
    // X-Forwarded-For without TRUST_PROXY_ENABLED is expected (the header is then ignored on
    // purpose); the library would print a console warning for every such deployment.
    validate: { xForwardedForHeader: false },
    handler: (req, res, _next, options) => {
      if (req.method === 'POST' && (req.path === '/' || req.path === '')) sendUssdText(res, options.statusCode, RATE_LIMIT_REPLY);
      else res.status(options.statusCode).json({ error: 'Too many requests' });
    },
  });
}
