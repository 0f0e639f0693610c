// Area A: twin entities, protocols, KPT claims, verification and verifiable credentials.
// Other areas use the services directly (the USSD area submits claims for households; the
// chain query node reads entities, claims and collections through the repository functions).
import { publicBaseUrl } from '../config.ts';
import { databaseGauge } from '../platform/metrics.ts';
import type { Area, AreaContext } from '../platform/area.ts';
import { areaRateLimit } from '../platform/http/rate-limit.ts';
import { isUnder } from '../platform/http/scope.ts';
import { ClaimSealer } from './claims/claim-sealer.ts';
import { ClaimService } from './claims/claims.service.ts';
import { CollectionService } from './claims/collections.service.ts';
import { DrawService } from './claims/draws.service.ts';
import { CredentialStatusService } from './credentials/credential-status.service.ts';
import { verifyCredential } from './credentials/credentials.ts';
import { EntityService } from './entities/entities.service.ts';
import { findEvidence } from './claims/evidence.repository.ts';
import { twinsHandlers } from './routes.ts';
import { EventService } from './events/events.service.ts';
import { eventHandlers } from './events/routes.ts';
import { NetworkGuard } from './events/network-guard.ts';
import { WebhookDispatcher } from './events/webhook-dispatcher.ts';
import { WebhookService } from './events/webhooks.service.ts';
import { KPT_CONTEXT_PATH } from './credentials/kpt-context.ts';
import { settlePublicBaseUrl } from './credentials/public-base-url.ts';
import { knownValidatorDids, loadValidatorKeys, type ValidatorKey } from './credentials/validator-key.ts';
import type { TwinsReadPort } from './read-port.ts';
import { twinsReadPort } from './read-port.repository.ts';
import { settleClaimAndEventOrder } from './claims/claim-order.repository.ts';

export interface TwinsArea extends Area {
  /** What other areas may read of area A's data. */
  reads: TwinsReadPort;
  entities: EntityService;
  claims: ClaimService;
  collections: CollectionService;
  statuses: CredentialStatusService;
  /** The current validator key (loaded, or generated and persisted, at start-up). */
  validatorKey(): Promise<ValidatorKey>;
}

/**
 * Area A, once the database's public base URL is settled and the validator keys are loaded
 * (start-up stops with a ConfigError on a conflicting PUBLIC_BASE_URL or a missing retired key).
 */
export async function createTwinsArea(ctx: AreaContext): Promise<TwinsArea> {
  const { db, config, logger } = ctx;
  const txOffset = await settleClaimAndEventOrder(db);
  if (txOffset) logger.warn({ txOffset }, "claims and events are stored ahead of this PostgreSQL cluster's transaction ids (the database was moved here): new ones now sort after them");
  // Signed into every credential (status lists, evidence): the database's, shared by every instance.
  const base = await settlePublicBaseUrl(db, config.PUBLIC_BASE_URL && publicBaseUrl(config), publicBaseUrl(config));
  if (!config.PUBLIC_BASE_URL && config.NODE_ENV === 'production') {
    logger.warn({ base }, 'PUBLIC_BASE_URL is not set: credentials name their status lists and evidence under the URL this database recorded first');
  }
  if (!config.VALIDATOR_PRIVATE_KEY && config.NODE_ENV === 'production') {
    logger.warn('VALIDATOR_PRIVATE_KEY is not set: credentials are signed with a key generated into the database, where it is stored in clear');
  }
  const keys = await loadValidatorKeys(db, config.VALIDATOR_PRIVATE_KEY, config.VALIDATOR_RETIRED_KEYS);
  const validatorKey = () => Promise.resolve(keys.current);
  const statuses = new CredentialStatusService(db, { base, keys, now: ctx.now });
  await statuses.start();
  const now = ctx.now ?? (() => new Date());
  const entities = new EntityService(db, ctx.now);
  const sealer = new ClaimSealer(validatorKey, (err) => logger.error({ err }, 'claim sealer thread failed; sealing claims on the request thread'));
  ctx.onClose(() => sealer.close());
  const claims = new ClaimService(db, { totalToleranceKg: config.KPT_TOTAL_TOLERANCE_KG, sealer, base, statuses });
  const collections = new CollectionService(db, ctx.now);
  const handlers = twinsHandlers({
    entities,
    claims,
    collections,
    draws: new DrawService(db, now),
    statuses,
    evidence: (cid) => findEvidence(db, cid),
    async verifyCredential(vc) {
      return verifyCredential(vc, { trusted: await knownValidatorDids(db), now: now(), status: (c) => statuses.check(c) });
    },
    publicBaseUrl: config.PUBLIC_BASE_URL,
  });
  databaseGauge(ctx.metrics, {
    name: 'hearth_kpt_claims',
    help: 'KPT claims by status.',
    labelNames: ['status'],
    read: async () => (await claims.countByStatus()).map(({ status, count }) => ({ labels: { status }, value: count })),
  });
  const guard = new NetworkGuard(config.WEBHOOK_ALLOWED_NETWORKS);
  const dispatcher = new WebhookDispatcher(db, {
    pollMs: config.WEBHOOK_POLL_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
    retryMaxMs: config.WEBHOOK_RETRY_MAX_MS,
    maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
    maxConsecutiveFailures: config.WEBHOOK_MAX_CONSECUTIVE_FAILURES,
    guard,
    logger,
  });
  dispatcher.start();
  ctx.onClose(() => dispatcher.stop());
  const events = eventHandlers({ events: new EventService(db), webhooks: new WebhookService(db, guard) });
  const limit = areaRateLimit({ area: 'twins', limit: config.TWINS_RATE_LIMIT_PER_MINUTE, stores: ctx.rateLimitStores, applies: (req) => isUnder(req.path, '/v1') });
  return {
    rateLimits: [limit.count, limit.countRefused],
    handlers: { ...handlers, ...events },
    browserPrefixes: ['/v1'],
    // The credential resources a wallet or verifier reads: context, status lists, evidence, verify.
    publicPrefixes: [KPT_CONTEXT_PATH, '/v1/credentials/status', '/v1/evidence', '/v1/credentials/verify'],
    reads: twinsReadPort(db),
    entities,
    claims,
    collections,
    statuses,
    validatorKey,
  };
}

export { EntityService, PROTOCOL_TYPE } from './entities/entities.service.ts';
export { ClaimService, type Admission, type SubmitResult } from './claims/claims.service.ts';
export { CollectionService } from './claims/collections.service.ts';
export { maySubmitInto } from './claims/collections.ts';
