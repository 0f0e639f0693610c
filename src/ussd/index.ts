// Area B: the USSD session gateway. createUssdArea builds the service, the routes and the
// periodic sweep of closed and expired sessions, and hands the app its gate (rate limit,
// operator switch), router and error shape (END replies) as an Area.
//
// Where each behaviour lives (entry points -> rules -> data access):
//   routes.ts         HTTP edge: the gateway's POSTs and the operator views; maps the area's
//                     errors (errors.ts) to HTTP errors, rendered as END replies (reply.ts)
//   rate-limit.ts     per client address, and per phone number behind the telecom gateways
//   service.ts        one hop: text diffing, retries, dial shortcuts, expiry, races between hops
//   session-store.ts  sessions in the database: versioned writes, the hop lease, the cache of
//                     recently written sessions, waiting for a concurrent hop's reply
//   menu-runner.ts    runs a hop through the menu machine and its effects; remembers pure hops
//   machine.ts        the menus as an XState machine (pure); menus.ts renders and pages screens,
//                     i18n/ holds every word in every language
//   effects.ts        one function per effect state; accounts.ts (PINs, account creation) and
//                     claims.ts (claim submission, references, plain reasons) hold the big ones,
//                     and the use cases spanning area A, each owning its unit of work
//   twins-port.ts     what area B needs of area A, as steps taking the use case's transaction;
//                     twins-adapter.ts implements it on area A's services (and turns area A's
//                     refusals into ClaimRefusedError)
//   repository.ts     the only SQL; maps rows to the area's types (model.ts)
//   pin.ts            PIN rules and encryption; simulator.ts a terminal phone for `make ussd`
import { randomInt } from 'node:crypto';
import { Counter } from 'prom-client';
import { databaseGauge } from '../platform/metrics.ts';
import type { Area, AreaContext } from '../platform/area.ts';
import { invalidConfig, type Config } from '../config.ts';
import type { Logger } from '../platform/logging.ts';
import { USSD_DEFAULT_COLLECTION_ID } from './collections.ts';
import { PIN_LENGTH, PinCipher, pinProblem, resolvePinKey } from './pin.ts';
import { ussdRateLimits } from './rate-limit.ts';
import { UssdRepository } from './repository.ts';
import { ussdErrorRendererFor } from './reply.ts';
import { ussdGate, ussdHandlers, ussdRefusalLog } from './routes.ts';
import { UssdService } from './service.ts';
import type { UssdTwinsPort } from './twins-port.ts';

export type { UssdTwinsPort } from './twins-port.ts';

/**
 * Operator action (CLI `ussd-unlock`): unlocks an account locked after 3 wrong PINs, once the
 * customer's identity was checked in person. `unlocked`, `not locked` or `not found`.
 */
export async function unlockUssdAccount(db: AreaContext['db'], customerId: string, now = new Date()): Promise<'unlocked' | 'not locked' | 'not found'> {
  const repo = new UssdRepository(db);
  const account = await repo.findAccountByCustomerId(customerId);
  if (!account) return 'not found';
  if (!account.lockedAt && account.failedPinAttempts === 0) return 'not locked';
  await repo.unlockAccount(customerId, now.toISOString());
  return 'unlocked';
}

/**
 * Operator action (CLI `ussd-unlock --new-pin`): a household that forgot its PIN gets a new one,
 * once its identity was checked in person; the account is unlocked too. The PIN is random (no
 * trivial one) and returned once, to be given to the household, who can change it under
 * Services. `not found` for an unknown Customer ID.
 */
export async function resetUssdPin(db: AreaContext['db'], config: Config, logger: Logger, customerId: string, now = new Date()): Promise<{ pin: string } | 'not found'> {
  const repo = new UssdRepository(db);
  if (!(await repo.findAccountByCustomerId(customerId))) return 'not found';
  // Sealed with the server's key, checked as its start-up does: a PIN sealed under another would never open.
  const pins = new PinCipher(resolvePinKey(config, logger, { create: false }));
  const sealed = await repo.newestSealedPin();
  if (sealed !== undefined) assertOpens(pins, sealed);
  let pin: string;
  do pin = String(randomInt(0, 10 ** PIN_LENGTH)).padStart(PIN_LENGTH, '0');
  while (pinProblem(pin));
  await repo.resetPin(customerId, pins.seal(pin), now.toISOString());
  return { pin };
}

/** Operator action (CLI `ussd-claim`): the claim id behind a reference a household reads out (case and spaces ignored). */
export function ussdClaimForRef(db: AreaContext['db'], ref: string): Promise<string | undefined> {
  return new UssdRepository(db).claimIdForRef(ref.replace(/\s+/g, '').toUpperCase());
}

export interface UssdArea extends Area {
  service: UssdService;
}

/**
 * Claims sent to a collection that is missing, declares no selection design or a self-selected
 * one would all be refused or rejected: found at start-up (naming the variable), not by the first
 * household.
 */
async function checkCollection(config: Config, twins: UssdTwinsPort, logger: Logger): Promise<void> {
  const id = config.USSD_COLLECTION_ID;
  let collection: Awaited<ReturnType<UssdTwinsPort['collection']>>;
  try {
    collection = await twins.collection();
  } catch (err) {
    // A database down at start-up is an outage (health reports it), not a configuration error.
    logger.warn({ err }, 'USSD_COLLECTION_ID could not be checked at start-up: the database did not answer');
    return;
  }
  const problem = !collection
    ? `no collection "${id}" exists; create it (POST /v1/collections with a selectionDesign) or unset the variable to use "${USSD_DEFAULT_COLLECTION_ID}"`
    : !collection.selectionDesign
      ? `collection "${id}" declares no selectionDesign, so every USSD claim in it would be rejected (random selection); its creator declares one (PATCH /v1/collections/${id} with "selectionDesign")`
      : collection.selectionDesign.type === 'self-selected'
        ? `collection "${id}" is self-selected, so every USSD claim in it would be rejected (random selection: not a random sample); use a full-population or random design`
        : !collection.takesGatewayClaims
        ? `collection "${id}" does not take claims from USSD_PRINCIPAL_DID (${config.USSD_PRINCIPAL_DID}); its creator adds that principal to the collection's submitters (PATCH /v1/collections/${id} with "submitters")`
        : undefined;
  if (problem) throw invalidConfig('USSD_COLLECTION_ID', problem);
  if (id === USSD_DEFAULT_COLLECTION_ID && config.NODE_ENV === 'production') {
    logger.warn({ collection: id }, 'USSD claims go to the full-population campaign of the households registered on this service; a campaign over a wider population draws its households in a collection of its own (USSD_COLLECTION_ID)');
  }
}

/**
 * A PIN key other than the one the stored PINs were sealed with would lock every household out,
 * each told the service is unavailable: start-up stops instead, saying so.
 */
async function checkPinKey(pins: PinCipher, repo: UssdRepository, logger: Logger): Promise<void> {
  let sealed: string | undefined;
  try {
    sealed = await repo.newestSealedPin();
  } catch (err) {
    // As for the collection: a database down at start-up is an outage, not a configuration error.
    logger.warn({ err }, 'PIN_ENCRYPTION_KEY could not be checked against the stored PINs at start-up: the database did not answer');
    return;
  }
  if (sealed !== undefined) assertOpens(pins, sealed);
}

/** The PIN key opens a stored PIN, else a configuration error naming it. */
function assertOpens(pins: PinCipher, sealed: string): void {
  try {
    pins.open(sealed);
  } catch {
    throw invalidConfig(
      'PIN_ENCRYPTION_KEY',
      'does not open the PINs already stored, which were sealed with another key (in development, the one in $DATA_DIR/pin-encryption.key). Set that key: under a new one no household can log in.',
    );
  }
}

/** The session id a hop names, if any: the error renderer also sees bodies that failed validation. */
function sessionIdOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null && 'sessionId' in body ? body.sessionId : undefined;
}

export async function createUssdArea(ctx: AreaContext, twins: UssdTwinsPort, opts: { now?: () => Date } = {}): Promise<UssdArea> {
  const { config, db, logger } = ctx;
  if (config.USSD_FUEL_KG_MIN >= config.USSD_FUEL_KG_MAX) {
    throw invalidConfig('USSD_FUEL_KG_MIN', 'must be less than USSD_FUEL_KG_MAX');
  }
  await checkCollection(config, twins, logger);
  const pins = new PinCipher(resolvePinKey(config, logger));
  const repo = new UssdRepository(db);
  await checkPinKey(pins, repo, logger);
  const service = new UssdService(repo, {
    db,
    appName: config.USSD_APP_NAME,
    idleSeconds: config.USSD_SESSION_IDLE_SECONDS,
    timeZone: config.USSD_TIMEZONE,
    defaultLanguage: config.USSD_DEFAULT_LANGUAGE,
    plausibleKg: { min: config.USSD_FUEL_KG_MIN, max: config.USSD_FUEL_KG_MAX },
    pins,
    twins,
    logger: logger.child({ area: 'ussd' }),
    now: opts.now,
  });
  const limits = ussdRateLimits(config, logger, ctx.rateLimitStores, (sessionId) => service.sessionLanguage(sessionId));

  const timer = setInterval(() => {
    service.sweep().then(
      (n) => n && logger.debug({ removed: n }, 'ussd sessions swept'),
      (err) => logger.warn({ err }, 'ussd session sweep failed'),
    );
  }, config.USSD_SWEEP_INTERVAL_SECONDS * 1000);
  timer.unref();
  ctx.onClose(() => clearInterval(timer));

  databaseGauge(ctx.metrics, {
    name: 'hearth_ussd_sessions_active',
    help: 'USSD sessions active (not ended, not expired).',
    read: async () => [{ value: (await service.activeSessions()).length }],
  });
  const hops = new Counter({ name: 'hearth_ussd_hops_total', help: 'USSD hops answered, by reply (CON continues, END closes).', labelNames: ['reply'], registers: [ctx.metrics] });
  return {
    // Rate limits and the operator switch, before anything reads the request.
    gates: [ussdGate(limits.perAddress, config.USSD_DEBUG_ENABLED)],
    handlers: ussdHandlers(service, limits.perPhone, (reply) => hops.inc({ reply: reply.slice(0, 3) })),
    errorRendererFor: ussdErrorRendererFor((req) => service.sessionLanguage(sessionIdOf(req.body)) ?? config.USSD_DEFAULT_LANGUAGE),
    errorObservers: [ussdRefusalLog(logger.child({ area: 'ussd' }))],
    service,
  };
}
