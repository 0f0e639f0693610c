// Area B's rate limits, in sliding windows of a minute:
//   - per client address (req.ip, which honours TRUST_PROXY): USSD_RATE_LIMIT_PER_MINUTE, 429
//     with Retry-After, for every caller but the telecom gateways;
//   - per phone number for hops from USSD_GATEWAY_ADDRESSES (all of a gateway's households
//     share its few addresses): USSD_PHONE_RATE_LIMIT_PER_MINUTE, answered 200 `END ...`, the
//     only answer a gateway shows to its user rather than dropping the session.
// With REDIS_URL the counters live in Redis so every instance shares them (the stores are the
// platform's, platform/http/rate-limit.ts).
import type { Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import proxyaddr from 'proxy-addr';
import type { UssdRequest } from '../../generated/openapi/types.gen.ts';
import type { Config } from '../config.ts';
import { sendUssdText } from './reply.ts';
import { passes } from '../platform/http/handlers.ts';
import { SLIDING_MINUTE, type RateLimitStores } from '../platform/http/rate-limit.ts';
import type { Logger } from '../platform/logging.ts';
import { CATALOGUES, type Language } from './i18n/index.ts';

/** The rate-limit reply in English; the limits answer in USSD_DEFAULT_LANGUAGE. */
export const RATE_LIMIT_REPLY = `END ${CATALOGUES.en.failures.tooManyRequests}`;
export const REDIS_PREFIX = 'hearth:ussd:rl:';
const PHONE_REDIS_PREFIX = 'hearth:ussd:rl-phone:';
const OUTAGE = { area: 'ussd', message: 'USSD rate limit not counted: its store failed; hops go through uncounted' };

export interface UssdRateLimits {
  /** Before body parsing: every area B request but the gateways', per address. */
  perAddress: RequestHandler;
  /** In the hop's handler, with its validated body: the gateways' hops, per phone number. */
  perPhone: (hop: UssdRequest, req: Request, res: Response) => Promise<boolean>;
}

export function ussdRateLimits(
  config: Pick<Config, 'USSD_RATE_LIMIT_PER_MINUTE' | 'USSD_PHONE_RATE_LIMIT_PER_MINUTE' | 'USSD_GATEWAY_ADDRESSES' | 'USSD_DEFAULT_LANGUAGE'>,
  logger: Logger,
  stores: RateLimitStores,
  /** The language of a hop's session, if this instance served it (the per-phone refusal is in it). */
  sessionLanguage: (sessionId: unknown) => Language | undefined = () => undefined,
): UssdRateLimits {
  const storeFor = (prefix: string) => stores(prefix, OUTAGE);
  const replyIn = (language: Language) => `END ${CATALOGUES[language].failures.tooManyRequests}`;
  // Counted before the body is read: the session, and so its language, is not known yet.
  const reply = replyIn(config.USSD_DEFAULT_LANGUAGE);
  const gateways = proxyaddr.compile(config.USSD_GATEWAY_ADDRESSES);
  const fromGateway = (req: Request) => config.USSD_GATEWAY_ADDRESSES.length > 0 && req.ip !== undefined && gateways(req.ip, 0);
  const perAddress = rateLimit({
    ...SLIDING_MINUTE,
    limit: config.USSD_RATE_LIMIT_PER_MINUTE,
    store: storeFor(REDIS_PREFIX),
    skip: fromGateway,
    handler: (req, res, _next, options) => {
      if (req.method === 'POST' && (req.path === '/' || req.path === '')) sendUssdText(res, options.statusCode, reply);
      else res.status(options.statusCode).json({ error: 'Too many requests' });
    },
  });
  // express-rate-limit hands its callbacks the Express request; the hop it counts is the one
  // the handler validated, looked up by request rather than read again from req.body.
  const hops = new WeakMap<Request, UssdRequest>();
  const hopOf = (req: Request): UssdRequest => {
    const hop = hops.get(req);
    if (!hop) throw new Error('per-phone rate limit run without its hop');
    return hop;
  };
  const perPhoneLimit = rateLimit({
    ...SLIDING_MINUTE,
    limit: config.USSD_PHONE_RATE_LIMIT_PER_MINUTE,
    store: storeFor(PHONE_REDIS_PREFIX),
    skip: (req) => !fromGateway(req),
    keyGenerator: (req) => hopOf(req).phoneNumber,
    handler: (req, res) => {
      logger.warn({ area: 'ussd', gateway: req.ip }, 'ussd hop refused: phone over its rate limit');
      sendUssdText(res, 200, replyIn(sessionLanguage(hopOf(req).sessionId) ?? config.USSD_DEFAULT_LANGUAGE));
    },
  });
  const perPhone = (hop: UssdRequest, req: Request, res: Response) => {
    hops.set(req, hop);
    return passes(perPhoneLimit, req, res);
  };
  return { perAddress, perPhone };
}
