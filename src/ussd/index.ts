// Area B: the USSD session gateway. createUssdArea builds the service, the routes and the
// periodic sweep of closed and expired sessions; app.ts mounts `gate` before the request
// validator (rate limit, operator switch) and `router` after it.
import type { Router } from 'express';
import type { AreaContext } from '../app.ts';
import { PinCipher, resolvePinKey } from './pin.ts';
import { ussdRateLimits } from './rate-limit.ts';
import { UssdRepository } from './repository.ts';
import { ussdGate, ussdRouter } from './routes.ts';
import { UssdService, type UssdTwinsPort } from './service.ts';

export type { UssdTwinsPort } from './service.ts';

/**
 * Operator action (CLI `ussd-unlock`): unlocks an account locked after 3 wrong PINs, once the
 * customer's identity was checked in person. `unlocked`, `not locked` or `not found`.
 */
export async function unlockUssdAccount(db: AreaContext['db'], customerId: string, now = new Date()): Promise<'unlocked' | 'not locked' | 'not found'> {
  const repo = new UssdRepository(db);
  const account = await repo.findAccountByCustomerId(customerId);
  if (!account) return 'not found';
  if (!account.locked_at && account.failed_pin_attempts === 0) return 'not locked';
  await repo.unlockAccount(customerId, now.toISOString());
  return 'unlocked';
}

export interface UssdArea {
  gate: Router;
  router: Router;
  service: UssdService;
}

export async function createUssdArea(ctx: AreaContext, twins: UssdTwinsPort, opts: { now?: () => Date } = {}): Promise<UssdArea> {
  const { config, db, logger } = ctx;
  const pins = new PinCipher(resolvePinKey(config, logger));
  const service = new UssdService(new UssdRepository(db), {
    appName: config.USSD_APP_NAME,
    idleSeconds: config.USSD_SESSION_IDLE_SECONDS,
    timeZone: config.USSD_TIMEZONE,
    pins,
    twins,
    logger: logger.child({ area: 'ussd' }),
    now: opts.now,
  });
  const limits = await ussdRateLimits(config, logger, ctx.onClose);

  const timer = setInterval(() => {
    service.sweep().then(
      (n) => n && logger.debug({ removed: n }, 'ussd sessions swept'),
      (err) => logger.warn({ err }, 'ussd session sweep failed'),
    );
  }, config.USSD_SWEEP_INTERVAL_SECONDS * 1000);
  timer.unref();
  ctx.onClose(() => clearInterval(timer));

  return { gate: ussdGate(limits.perAddress, config.USSD_DEBUG_ENABLED), router: ussdRouter(service, limits.perPhone), service };
}
