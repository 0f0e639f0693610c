// A claim's seal: its canonical record (RFC 8785), that record's CIDv1 and, for a claim that can
// be verified, the KPT credential signed by the validator. It is a pure function of its input
// and the key (Ed25519 signatures are deterministic), so the sealer thread (claim-sealer.ts) and
// the request thread produce the same bytes.
import type { KptClaimRequest, KptCredentialSummary, StoredFuelMeasurements, VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { jcs, signCredential, VC_V2_CONTEXT } from './credentials.ts';
import { cidOf } from './evidence.ts';
import { preciseSum } from './kpt-rules.ts';
import type { ValidatorKey } from './validator-key.ts';

/** A claim request with its defaults filled in (collection, unit): what is stored as its body. */
export type NormalisedClaim = KptClaimRequest & { collectionId: string; fuelMeasurements: StoredFuelMeasurements };

export interface SealInput {
  id: string;
  claim: NormalisedClaim;
  submittedBy: string;
  /** ISO time: the claim's createdAt, and the credential's validFrom. */
  at: string;
  /** Whether to sign the credential: only for a claim whose rules can all pass. */
  withCredential: boolean;
}

/** The claim columns that carry its credential. */
export interface CredentialColumns {
  credential: string;
  verifiable_credential: string;
  verified_at: string;
}

export interface ClaimSeal {
  /** The canonical JSON of the stored claim, kept as evidence under `claimCid`. */
  canonical: string;
  claimCid: string;
  credential?: CredentialColumns;
}

export function sealClaim(input: SealInput, key: ValidatorKey): ClaimSeal {
  const { type: _type, ...rest } = input.claim;
  const canonical = jcs({ id: input.id, type: 'KPTClaim', ...rest, submittedBy: input.submittedBy, createdAt: input.at });
  const claimCid = cidOf(Buffer.from(canonical, 'utf8'));
  return {
    canonical,
    claimCid,
    ...(input.withCredential ? { credential: credentialColumns(input.id, claimCid, input.claim, key, input.at) } : {}),
  };
}

/** The spec's credential summary and the signed VC 2.0 credential of a verified claim. */
export function credentialColumns(claimId: string, claimCid: string, body: NormalisedClaim, key: ValidatorKey, now: string): CredentialColumns {
  const { dailyLogs, total } = body.fuelMeasurements;
  const claimUri = `ipfs://${claimCid}`;
  const summary: KptCredentialSummary = {
    type: 'KPTCredential',
    issuer: key.did,
    evidence: [claimUri, ...(body.evidence ?? []).map((e) => e.uri)],
  };
  const vc: VerifiableCredential = signCredential(
    {
      '@context': [VC_V2_CONTEXT],
      id: `urn:hearth:credential:${claimId}`,
      type: ['VerifiableCredential', 'KPTCredential'],
      issuer: key.did,
      validFrom: now,
      credentialSubject: {
        id: body.householdId,
        claimId,
        collectionId: body.collectionId,
        testGroup: body.testGroup,
        ...(body.testPeriod ? { testPeriod: { startDate: body.testPeriod.startDate, endDate: body.testPeriod.endDate } } : {}),
        days: dailyLogs.length,
        totalFuelKg: total,
        meanFuelKgPerDay: preciseSum(dailyLogs) / dailyLogs.length,
      },
      evidence: [
        { id: claimUri, type: ['Evidence', 'KPTClaimRecord'], description: 'Canonical JSON (RFC 8785) of the verified claim' },
        ...(body.evidence ?? []).map((e) => ({ id: e.uri, type: ['Evidence'], evidenceType: e.type, ...(e.description ? { description: e.description } : {}) })),
      ],
    },
    key,
    new Date(now),
  );
  return { credential: JSON.stringify(summary), verifiable_credential: JSON.stringify(vc), verified_at: now };
}
