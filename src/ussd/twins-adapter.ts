// The twins port on area A's services: households are created as twin entities and KPT claims
// are submitted through the same ClaimService as POST /v1/claims (same rules, same statuses). The
// gateway acts as its own principal (USSD_PRINCIPAL_DID), so it controls the households it creates.
// This is the one place that knows area A's errors: a claim it refuses reaches area B as a
// ClaimRefusedError.
import type { KptClaim } from '../../generated/openapi/types.gen.ts';
import { DomainError, inputPointer } from '../platform/domain-errors.ts';
import type { Principal } from '../platform/keys/service.ts';
import type { ClaimService, CollectionService, EntityService } from '../twins/index.ts';
import { ClaimRefusedError, type ClaimSummary, type UssdTwinsPort } from './twins-port.ts';

function summary(claim: Pick<KptClaim, 'id' | 'status' | 'reasons'>): ClaimSummary {
  const rule = claim.status === 'rejected' || claim.status === 'pending' ? claim.reasons[0]?.rule : undefined;
  return { id: claim.id, status: claim.status, ...(rule ? { reasonRule: rule } : {}) };
}

/** Area A refuses a claim with a DomainError; anything else (the database, a bug) is a failure and passes on. */
export function asClaimRefusal(err: unknown): unknown {
  if (!(err instanceof DomainError)) return err;
  const problems = err.issues.map((i) => ({ field: inputPointer(i.path), message: i.message, ...(i.rule ? { rule: i.rule } : {}) }));
  return new ClaimRefusedError(err.message, problems, { cause: err });
}

const HOUSEHOLD_ENTITY_TYPE = 'Household';

export function ussdTwinsPort(
  twins: { entities: EntityService; claims: ClaimService; collections: CollectionService },
  principalDid: string,
  collectionId: string,
): UssdTwinsPort {
  const principal: Principal = { keyId: 'ussd-gateway', did: principalDid, scopes: ['twins:write', 'claims:write', 'claims:read'] };
  return {
    async createHousehold({ customerId, village, storeWithHousehold }) {
      // The name stays in the USSD account; the twin carries no personal data beyond the village.
      const entity = await twins.entities.create(
        principal,
        { type: HOUSEHOLD_ENTITY_TYPE, properties: { customerId, channel: 'ussd', ...(village ? { village } : {}) } },
        { storeWithEntity: storeWithHousehold },
      );
      return { did: entity.did };
    },
    async submitKptClaim(input) {
      const submitted = await twins.claims
        .submit(
          principal,
          {
            type: 'KPTClaim',
            collectionId,
            householdId: input.householdDid,
            testGroup: input.testGroup,
            fuelMeasurements: { total: input.total, dailyLogs: input.dailyLogs },
            testPeriod: { startDate: input.startDate, endDate: input.endDate, durationDays: input.dailyLogs.length },
            externalFactors: input.externalFactors,
          },
          { idempotencyKey: input.idempotencyKey, storeWithClaim: input.storeWithClaim },
        )
        .catch((err: unknown) => {
          throw asClaimRefusal(err);
        });
      return summary(submitted.claim);
    },
    async collection() {
      const found = await twins.collections.get(collectionId).catch((err: unknown) => {
        if (err instanceof DomainError && err.kind === 'not-found') return undefined;
        throw err;
      });
      return found && { id: found.id, selectionMethod: found.selectionMethod };
    },
    async latestClaim(householdDid) {
      let latest: ClaimSummary | undefined;
      let cursor: string | undefined;
      do {
        const page = await twins.claims.list({ household: householdDid, cursor, limit: 100 });
        const last = page.items.at(-1);
        if (last) latest = { ...summary(last), submittedOn: last.createdAt.slice(0, 10) };
        cursor = page.nextCursor;
      } while (cursor);
      return latest;
    },
  };
}
