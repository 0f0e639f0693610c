// A claim's seal: its canonical record (RFC 8785), that record's CIDv1 and, for a claim that can
// be verified, the KPT credential signed by the validator. It is a pure function of its input
// and the key (Ed25519 signatures are deterministic), so the sealer thread (claim-sealer.ts) and
// the request thread produce the same bytes.
import type { KptClaimRequest, KptCredentialSummary, StoredFuelMeasurements, VerifiableCredential } from '../../../generated/openapi/types.gen.ts';
import { statusEntries } from '../credentials/credential-status.ts';
import { jcs, signCredential, VC_V2_CONTEXT } from '../credentials/credentials.ts';
import { cidOf, evidenceUrl } from './evidence.ts';
import { KPT_CONTEXT_DIGEST, KPT_CONTEXT_URL, type PublicBase } from '../credentials/kpt-context.ts';
import { preciseSum } from './kpt-rules.ts';
import type { SelectionStatement } from './selection.ts';
import type { ValidatorKey } from '../credentials/validator-key.ts';

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
  /** How its household was selected, as the credential states it (given whenever withCredential). */
  selection: SelectionStatement | undefined;
  issuance: Issuance;
}

/** Where a credential's context, status lists and evidence are served, and its place in the status lists. */
export interface Issuance {
  base: PublicBase;
  /** Its index in the status lists; absent: the credential carries no credentialStatus. */
  statusIndex?: number;
}

/**
 * A verified claim's credential, serialised as it is stored (on the sealer thread, so the
 * request thread does not stringify it): the spec's summary and the signed VC 2.0 credential.
 */
export interface SealedCredential {
  summary: string;
  verifiableCredential: string;
  verifiedAt: string;
}

export interface ClaimSeal {
  /** The canonical JSON of the stored claim, kept as evidence under `claimCid`. */
  canonical: string;
  claimCid: string;
  credential?: SealedCredential;
}

export function sealClaim(input: SealInput, key: ValidatorKey): ClaimSeal {
  const { type: _type, ...rest } = input.claim;
  const canonical = jcs({ id: input.id, type: 'KPTClaim', ...rest, submittedBy: input.submittedBy, createdAt: input.at });
  const claimCid = cidOf(Buffer.from(canonical, 'utf8'));
  return {
    canonical,
    claimCid,
    ...(input.withCredential && input.selection
      ? { credential: sealCredential({ claimId: input.id, claimCid, body: input.claim, now: input.at, selection: input.selection, issuance: input.issuance }, key) }
      : {}),
  };
}

export const credentialIdOf = (claimId: string) => `urn:hearth:credential:${claimId}`;

/** What a verified claim's credential is sealed from. */
export interface CredentialInput {
  claimId: string;
  claimCid: string;
  body: NormalisedClaim;
  /** ISO time: the credential's validFrom. */
  now: string;
  /** How the household was selected (KPT rule 5 held for it). */
  selection: SelectionStatement;
  issuance: Issuance;
}

/** The spec's credential summary and the signed VC 2.0 credential of a verified claim. */
export function sealCredential({ claimId, claimCid, body, now, selection, issuance: { base, statusIndex } }: CredentialInput, key: ValidatorKey): SealedCredential {
  const { dailyLogs, total } = body.fuelMeasurements;
  const claimUri = `ipfs://${claimCid}`;
  const summary: KptCredentialSummary = {
    type: 'KPTCredential',
    issuer: key.did,
    evidence: [claimUri, ...(body.evidence ?? []).map((e) => e.uri)],
  };
  const vc: VerifiableCredential = signCredential(
    {
      '@context': [VC_V2_CONTEXT, KPT_CONTEXT_URL],
      id: credentialIdOf(claimId),
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
        // The design under which rule 5 held: a census of a frame is stated as one, never as a random sample.
        selectionDesign: selection.design,
        selectionFrame: selection.frame,
        ...(selection.drawId ? { selectionDraw: `${base}/v1/collections/${encodeURIComponent(body.collectionId)}/draws/${selection.drawId}` } : {}),
      },
      evidence: [
        {
          id: claimUri,
          type: ['Evidence', 'KPTClaimRecord'],
          description: 'Canonical JSON (RFC 8785) of the verified claim',
          evidenceUrl: evidenceUrl(base, claimCid),
        },
        ...(body.evidence ?? []).map((e) => ({ id: e.uri, type: ['Evidence'], evidenceType: e.type, ...(e.description ? { description: e.description } : {}) })),
      ],
      ...(statusIndex === undefined ? {} : { credentialStatus: statusEntries(base, statusIndex) }),
      // The KPT context pinned (VC 2.0 section 5.3): a verifier checks its bundled copy against it.
      relatedResource: [{ id: KPT_CONTEXT_URL, mediaType: 'application/ld+json', digestMultibase: KPT_CONTEXT_DIGEST }],
    },
    key,
    new Date(now),
  );
  return { summary: JSON.stringify(summary), verifiableCredential: JSON.stringify(vc), verifiedAt: now };
}
