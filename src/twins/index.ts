// Area A: twin entities, protocols, KPT claims, verification and verifiable credentials.
// Other areas use the services directly (the USSD area submits claims for households; the
// chain query node reads entities, claims and collections through the repository functions).
import { publicBaseUrl } from '../config.ts';
import { databaseGauge } from '../platform/metrics.ts';
import type { Area, AreaContext } from '../platform/area.ts';
import { dbClientOf } from '../platform/db/index.ts';
import { ClaimSealer } from './claims/claim-sealer.ts';
import { ClaimService } from './claims/claims.service.ts';
import { CollectionService } from './claims/collections.service.ts';
import { CredentialStatusService } from './credentials/credential-status.service.ts';
import { verifyCredential } from './credentials/credentials.ts';
import { EntityService } from './entities/entities.service.ts';
import { findEvidence } from './claims/evidence.repository.ts';
import { twinsRouter } from './routes.ts';
import type { PublicBase } from './credentials/kpt-context.ts';
import { knownValidatorDids, loadValidatorKey, type ValidatorKey } from './credentials/validator-key.ts';
import { twinsReadPort, type TwinsReadPort } from './read-port.ts';

export interface TwinsArea extends Area {
  /** What other areas may read of area A's data. */
  reads: TwinsReadPort;
  entities: EntityService;
  claims: ClaimService;
  collections: CollectionService;
  statuses: CredentialStatusService;
  /** The validator key (loaded, or generated and persisted, on first use). */
  validatorKey(): Promise<ValidatorKey>;
}

export function createTwinsArea(ctx: AreaContext): TwinsArea {
  const { db, config, logger } = ctx;
  let keyPromise: Promise<ValidatorKey> | undefined;
  const validatorKey = () => {
    keyPromise ??= loadValidatorKey(db, config.VALIDATOR_PRIVATE_KEY).catch((err) => {
      keyPromise = undefined;
      throw err;
    });
    return keyPromise;
  };

  // Signed into every credential (context, status lists, evidence): set PUBLIC_BASE_URL in production.
  const base: PublicBase = publicBaseUrl(config);
  // On PostgreSQL instances share the database: each would sign under its own local URL, which
  // the others do not take for theirs when they verify.
  if (!config.PUBLIC_BASE_URL && (config.NODE_ENV === 'production' || dbClientOf(db) === 'postgres')) {
    logger.warn(
      { base },
      'PUBLIC_BASE_URL is not set: credentials name their context, status lists and evidence under a local URL, which another instance does not verify',
    );
  }
  if (!config.VALIDATOR_PRIVATE_KEY && config.NODE_ENV === 'production') {
    logger.warn('VALIDATOR_PRIVATE_KEY is not set: credentials are signed with a key generated into the database, where it is stored in clear');
  }
  const now = ctx.now ?? (() => new Date());
  const entities = new EntityService(db, ctx.now);
  const sealer = new ClaimSealer(validatorKey, (err) => logger.error({ err }, 'claim sealer thread failed; sealing claims on the request thread'));
  ctx.onClose(() => sealer.close());
  const statuses = new CredentialStatusService(db, { base, validatorKey });
  const claims = new ClaimService(db, { totalToleranceKg: config.KPT_TOTAL_TOLERANCE_KG, sealer, base, statuses });
  const collections = new CollectionService(db, ctx.now);
  const router = twinsRouter({
    entities,
    claims,
    collections,
    statuses,
    evidence: (cid) => findEvidence(db, cid),
    async verifyCredential(vc) {
      await validatorKey();
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
  return { routers: [{ router, prefixes: ['/v1'] }], browserPrefixes: ['/v1'], reads: twinsReadPort(db), entities, claims, collections, statuses, validatorKey };
}

export { EntityService, PROTOCOL_TYPE } from './entities/entities.service.ts';
export { ClaimService, type Admission, type SubmitResult } from './claims/claims.service.ts';
export { CollectionService, maySubmitInto } from './claims/collections.service.ts';
