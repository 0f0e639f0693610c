// Area B's narrow view of area A: households are created as twin entities and KPT claims are
// submitted through the same ClaimService as POST /v1/claims (same rules, same statuses). The
// gateway acts as its own principal (USSD_PRINCIPAL_DID), so it controls the households it creates.
import { DomainError } from '../platform/domain-errors.ts';
import type { KptClaim } from '../../generated/openapi/types.gen.ts';
import type { ClaimService, CollectionService, EntityService } from '../twins/index.ts';
import type { Principal } from '../platform/keys/service.ts';
import type { ClaimSummary, UssdTwinsPort } from './service.ts';

function summary(claim: Pick<KptClaim, 'id' | 'status' | 'reasons'>): ClaimSummary {
  const rule = claim.status === 'rejected' || claim.status === 'pending' ? claim.reasons[0]?.rule : undefined;
  return { id: claim.id, status: claim.status, ...(rule ? { reasonRule: rule } : {}) };
}

export const HOUSEHOLD_ENTITY_TYPE = 'Household';

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
      const { claim } = await twins.claims.submit(
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
      );
      return summary(claim);
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
