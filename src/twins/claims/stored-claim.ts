// A stored KPT claim as the service reads it, and its contract view (JSON text made from its row).
import type { ClaimStatus, KptClaim, TestGroup } from '../../../generated/openapi/types.gen.ts';
import type { KptClaims } from '../../../generated/db/tables.ts';
import type { NormalisedClaim, SealedCredential } from './claim-seal.ts';

/** A stored claim; its credential's index in the status lists (credential-status.ts) is null without one. */
export type ClaimRow = Omit<KptClaims, 'test_group' | 'status'> & { test_group: TestGroup; status: ClaimStatus };

/** A test period, as the claim rules compare them (ISO dates). */
export type Period = { start: string; end: string };

export const periodOfRow = (r: Pick<ClaimRow, 'start_date' | 'end_date'>): Period | undefined =>
  r.start_date && r.end_date ? { start: r.start_date, end: r.end_date } : undefined;

/**
 * A stored claim, as the service reads it. Its JSON columns are parsed when read, not before
 * (a submission reads none of them), and its contract view is made from its row (claimJsonOf).
 */
export class StoredClaim {
  /** Its place in the order claims were stored in. */
  readonly seq: number;
  readonly id: string;
  /** Identity of its measurement (an identical resubmission has the same). */
  readonly claimKey: string;
  readonly collectionId: string;
  readonly householdId: string;
  readonly testGroup: TestGroup;
  readonly status: ClaimStatus;
  readonly period: Period | undefined;
  readonly claimCid: string;
  readonly submittedBy: string;
  /** Its credential's index in the status lists (credential-status.ts); null without one. */
  readonly statusListIndex: number | null;
  private parsedRequest: NormalisedClaim | undefined;
  /** toJson's text, made once: a submission answers it and may keep it with its key. */
  private json: string | undefined;

  constructor(private readonly row: ClaimRow) {
    this.seq = row.seq;
    this.id = row.id;
    this.claimKey = row.claim_key;
    this.collectionId = row.collection_id;
    this.householdId = row.household_did;
    this.testGroup = row.test_group;
    this.status = row.status;
    this.period = periodOfRow(row);
    this.claimCid = row.claim_cid;
    this.submittedBy = row.submitted_by;
    this.statusListIndex = row.status_list_index;
  }

  /** The request it was submitted with, defaults filled in. */
  get request(): NormalisedClaim {
    return (this.parsedRequest ??= JSON.parse(this.row.body) as NormalisedClaim);
  }

  get checks(): KptClaim['checks'] {
    return JSON.parse(this.row.checks) as KptClaim['checks'];
  }

  get reasons(): KptClaim['reasons'] {
    return JSON.parse(this.row.reasons) as KptClaim['reasons'];
  }

  /** The credential it carries, as stored; undefined for one without. */
  get credential(): SealedCredential | undefined {
    const r = this.row;
    return r.credential !== null && r.verifiable_credential !== null && r.verified_at !== null
      ? { summary: r.credential, verifiableCredential: r.verifiable_credential, verifiedAt: r.verified_at }
      : undefined;
  }

  /** The claim as the contract shows it. */
  toKptClaim(): KptClaim {
    return JSON.parse(this.toJson()) as KptClaim;
  }

  /** toKptClaim's JSON text, made without parsing the stored credential (claimJsonOf). */
  toJson(): string {
    return (this.json ??= claimJsonOf(this.row));
  }
}

// SQLite answers booleans as 0/1; a revoked credential stays revoked whatever its suspension.
const credentialStateOf = (r: ClaimRow): NonNullable<KptClaim['credentialState']> =>
  Number(r.credential_revoked) ? 'revoked' : Number(r.credential_suspended) ? 'suspended' : 'valid';

/**
 * The claim as the contract shows it, as JSON text: its JSON columns (checks, reasons and the
 * credential, most of its bytes) are spliced in as stored, not parsed and serialised again.
 * They hold what JSON.stringify wrote when the claim was stored, so the text is the one
 * JSON.stringify would give of the parsed claim, member for member and in the same order.
 */
function claimJsonOf(r: ClaimRow): string {
  const body = JSON.parse(r.body) as NormalisedClaim;
  const head = JSON.stringify({
    id: r.id,
    type: 'KPTClaim',
    status: r.status,
    collectionId: r.collection_id,
    householdId: r.household_did,
    testGroup: r.test_group,
    fuelMeasurements: body.fuelMeasurements,
    ...(body.testPeriod ? { testPeriod: body.testPeriod } : {}),
    ...(body.cookingSessions ? { cookingSessions: body.cookingSessions } : {}),
    ...(body.evidence ? { evidence: body.evidence } : {}),
    ...(body.externalFactors ? { externalFactors: body.externalFactors } : {}),
    ...(body.corrects ? { corrects: body.corrects } : {}),
    claimCid: r.claim_cid,
  } satisfies Partial<KptClaim>);
  const tail = JSON.stringify({
    submittedBy: r.submitted_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.verified_at ? { verifiedAt: r.verified_at } : {}),
    ...(r.credential ? { credentialState: credentialStateOf(r) } : {}),
  } satisfies Partial<KptClaim>);
  const credential = r.credential ? `,"credential":${r.credential}` : '';
  const verifiableCredential = r.verifiable_credential ? `,"verifiableCredential":${r.verifiable_credential}` : '';
  return `${head.slice(0, -1)},"checks":${r.checks},"reasons":${r.reasons}${credential}${verifiableCredential},${tail.slice(1)}`;
}

