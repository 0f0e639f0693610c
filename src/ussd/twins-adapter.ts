// The twins port on area A's services: households are created as twin entities and KPT claims
// are submitted through the same ClaimService as POST /v1/claims (same rules, same statuses). The
// gateway acts as its own principal (USSD_PRINCIPAL_DID), so it controls the households it creates.
// This is the one place that knows area A's errors: a claim it refuses reaches area B as a
// ClaimRefusedError.
import type { KptClaim } from '../../generated/openapi/types.gen.ts';
import { DomainError, inputPointer } from '../platform/domain-errors.ts';
import type { Principal } from '../platform/keys/service.ts';
import { maySubmitInto, type Admission, type ClaimService, type CollectionService, type EntityService, type SubmitResult } from '../twins/index.ts';
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
  /** Area A's promise, its refusal as a ClaimRefusedError. */
  const refusing = <T>(step: Promise<T>): Promise<T> =>
    step.catch((err: unknown) => {
      throw asClaimRefusal(err);
    });
  return {
    async newHousehold(trx, { village }) {
      // The name and the Customer ID (half of the household's login) stay in the USSD account; the
      // twin, which any twins:read key can list, carries no personal data beyond the village.
      const entity = await twins.entities.checkNew(trx, principal, {
        type: HOUSEHOLD_ENTITY_TYPE,
        properties: { channel: 'ussd', ...(village ? { village } : {}) },
      });
      return { did: entity.did, store: (storeTrx) => twins.entities.insertNew(storeTrx, entity) };
    },
    async prepareClaim(input) {
      const { claims } = twins;
      const submission = await refusing(
        claims.prepare(
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
          { idempotencyKey: input.idempotencyKey },
        ),
      );
      // The steps' results area A goes on with, kept here: area B sees claim ids.
      let admission: Admission | undefined;
      let created: Awaited<ReturnType<ClaimService['store']>> | undefined;
      let answer: Awaited<ReturnType<ClaimService['recover']>> | undefined;
      const reported = async (step: Promise<SubmitResult>) => summary((await refusing(step)).claim);
      return {
        claimId: submission.id,
        async admit(sql) {
          admission = await refusing(claims.admit(sql, submission));
          return 'replay' in admission ? admission.replay.id : undefined;
        },
        async store(sql) {
          if (!admission || !('admitted' in admission)) throw new Error(`claim ${submission.id} stored before it was admitted`);
          created = await refusing(claims.store(sql, submission, admission.admitted));
        },
        stored() {
          if (!created) throw new Error(`claim ${submission.id} was not stored`);
          return reported(claims.answer(created, true));
        },
        async replay() {
          if (!admission || !('replay' in admission)) throw new Error(`no claim answers submission ${submission.id}`);
          answer = await refusing(claims.replaying(submission, admission.replay));
          return answer.id;
        },
        async recover(err) {
          answer = await refusing(claims.recover(submission, err));
          return answer.id;
        },
        replayed() {
          if (!answer) throw new Error(`no claim answers submission ${submission.id}`);
          return reported(claims.answer(answer, false));
        },
      };
    },
    async collection() {
      const found = await twins.collections.entrustToArea(collectionId, principalDid);
      return found && { id: found.id, selectionDesign: found.selectionDesign, takesGatewayClaims: maySubmitInto(found, principalDid) };
    },
    async claim(claimId) {
      const found = await twins.claims.get(claimId);
      return found && { ...summary(found), submittedOn: found.createdAt.slice(0, 10) };
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
