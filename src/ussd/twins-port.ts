// Area B's narrow view of area A (the port): households are created as twin entities and KPT
// claims submitted through area A's services. twins-adapter.ts implements it on those services;
// tests implement it with doubles.
import type { ClaimStatus, ExternalFactors, KptClaim, TestGroup } from '../../generated/openapi/types.gen.ts';
import type { Sql } from '../platform/db/sql.ts';

/** A claim as area A reports it: `reasonRule` is the rule id of the first reason of a rejected or pending claim. */
export interface ClaimSummary {
  id: string;
  status: ClaimStatus;
  submittedOn?: string;
  reasonRule?: KptClaim['reasons'][number]['rule'];
}

/** Area A refused a submission (it broke a rule before any claim was stored): the rules it named, and its detail for the operator. */
export class ClaimRefusedError extends Error {
  override name = 'ClaimRefusedError';
  constructor(
    readonly detail: string,
    readonly problems: { field?: string; message: string; rule?: string }[] = [],
    options?: ErrorOptions,
  ) {
    super(detail, options);
  }
}

/** What the gateway needs of area A (twins and claims), wired in app.ts. */
export interface UssdTwinsPort {
  /** Creates the household twin entity (controlled by the gateway's principal); its DID. */
  createHousehold(input: {
    name: string;
    village: string | null;
    customerId: string;
    /** Area B's writes that commit with the twin or not at all (see area A's EntityService.create). */
    storeWithHousehold: (sql: Sql, did: string) => Promise<void>;
  }): Promise<{ did: string }>;
  /** Submits a KPT claim through area A's claim service; throws ClaimRefusedError when area A refuses it. */
  submitKptClaim(input: {
    householdDid: string;
    testGroup: TestGroup;
    dailyLogs: number[];
    total: number;
    externalFactors: Required<ExternalFactors>;
    startDate: string;
    endDate: string;
    idempotencyKey: string;
    /** Area B's writes that commit with the claim or not at all (see area A's SubmitOptions). */
    storeWithClaim: (sql: Sql, claimId: string) => Promise<void>;
  }): Promise<ClaimSummary>;
  /** The household's most recent claim, if any. */
  latestClaim(householdDid: string): Promise<ClaimSummary | undefined>;
  /** The collection (KPT campaign) claims go to, checked at start-up; undefined if there is none. */
  collection(): Promise<{ id: string; selectionMethod?: string } | undefined>;
}
