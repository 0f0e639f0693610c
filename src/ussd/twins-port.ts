// Area B's narrow view of area A (the port): households are created as twin entities and KPT
// claims submitted through area A's services, as steps that run in the unit of work of area B's
// use case (accounts.ts, claims.ts), which stores its own writes in the same transaction.
// twins-adapter.ts implements it on those services; tests implement it with doubles.
import type { ClaimStatus, ExternalFactors, KptClaim, SelectionDesign, TestGroup } from '../../generated/openapi/types.gen.ts';
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

/** A household twin entity area A has checked and given its DID, not stored yet. */
export interface NewHousehold {
  readonly did: string;
  /** Stores it, in the transaction it was checked in. */
  store(trx: Sql): Promise<void>;
}

/**
 * A KPT claim area A has checked and sealed, whose steps the submitting use case runs in its own
 * unit of work (claims.ts): `admit` and `store` in one transaction, the rest after it. Every
 * step throws ClaimRefusedError when area A refuses the claim.
 */
export interface KptClaimSubmission {
  /** The id the claim is stored under if it is new. */
  readonly claimId: string;
  /**
   * In the caller's transaction, first: the id of a claim stored before that answers this
   * submission (a retry, an identical claim: nothing is to be stored), or undefined.
   */
  admit(sql: Sql): Promise<string | undefined>;
  /** In the same transaction, when `admit` found none: stores (and verifies) the claim. */
  store(sql: Sql): Promise<void>;
  /** After the commit of `store`: the claim. */
  stored(): Promise<ClaimSummary>;
  /** After the commit of an `admit` that found a claim: that claim stands as the answer; its id. */
  replay(): Promise<string>;
  /**
   * After the unit of work failed with `err`: the id of the claim a concurrent submission
   * committed first, which answers this one; else throws `err`.
   */
  recover(err: unknown): Promise<string>;
  /** After `replay` or `recover` (and the caller's writes for that claim): the claim. */
  replayed(): Promise<ClaimSummary>;
}

/** What the gateway needs of area A (twins and claims), wired in app.ts. */
export interface UssdTwinsPort {
  /** In the caller's transaction: the household twin entity (controlled by the gateway's principal), checked, to be stored. */
  newHousehold(trx: Sql, input: { name: string; customerId: string; village: string | null }): Promise<NewHousehold>;
  /** Checks and seals a KPT claim for area A's claim service, outside any transaction. Throws ClaimRefusedError. */
  prepareClaim(input: {
    householdDid: string;
    testGroup: TestGroup;
    dailyLogs: number[];
    total: number;
    externalFactors: Required<ExternalFactors>;
    startDate: string;
    endDate: string;
    idempotencyKey: string;
  }): Promise<KptClaimSubmission>;
  /** A claim by its id, if there is one. */
  claim(claimId: string): Promise<ClaimSummary | undefined>;
  /** The household's most recent claim, if any. */
  latestClaim(householdDid: string): Promise<ClaimSummary | undefined>;
  /**
   * The collection (KPT campaign) claims go to, checked at start-up; undefined if there is none.
   * One the migrations made (`ussd`) is first entrusted to the gateway's principal;
   * `takesGatewayClaims` says whether that principal may submit into it.
   */
  collection(): Promise<{ id: string; selectionDesign?: SelectionDesign; takesGatewayClaims: boolean } | undefined>;
}
