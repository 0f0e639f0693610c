// W3C Verifiable Credentials Data Model 2.0 secured with Data Integrity proofs, cryptosuite
// eddsa-jcs-2022 (W3C "Data Integrity EdDSA Cryptosuites v1.0", section 3.3): RFC 8785 JCS
// canonicalisation, SHA-256, Ed25519, proofValue multibase base58btc. No JSON-LD, no network.
import { hash, sign, verify, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import { base58btc } from 'multiformats/bases/base58';
import type { CredentialVerifyResult, VerifiableCredential } from '../../../generated/openapi/types.gen.ts';
import { base58btcMaxLength, publicKeyFromDidKey, publicKeyFromRaw, type ValidatorKey } from './validator-key.ts';
import { dateTimeStampMs } from './xsd-datetime.ts';

export const VC_V2_CONTEXT = 'https://www.w3.org/ns/credentials/v2';

// A key-remapping mapped type, not Omit: Omit over the type's index signature would lose every named member.
export type UnsignedCredential = { [K in keyof VerifiableCredential as K extends 'proof' ? never : K]: VerifiableCredential[K] };
type Json = Record<string, unknown>;

const sha256 = (s: string) => hash('sha256', s, 'buffer');

export function jcs(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError('value cannot be canonicalised');
  return out;
}

/** hashData (section 3.3.5) = SHA-256(JCS(proof configuration)) || SHA-256(JCS(document)). */
function hashData(document: Json, proofConfig: Json): Buffer {
  return Buffer.concat([sha256(jcs(proofConfig)), sha256(jcs(document))]);
}

const secondsPrecision = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Create Proof (section 3.3.1): the proof carries the document's `@context` (step 2), so a
 * verifier hashes the same proof configuration the signer did.
 */
export function signCredential(unsigned: UnsignedCredential, key: ValidatorKey, now = new Date()): VerifiableCredential {
  const proofConfig = {
    type: 'DataIntegrityProof' as const,
    cryptosuite: 'eddsa-jcs-2022' as const,
    created: secondsPrecision(now),
    verificationMethod: key.verificationMethod,
    proofPurpose: 'assertionMethod' as const,
    '@context': unsigned['@context'],
  };
  const signature = sign(null, hashData(unsigned, proofConfig), key.privateKey);
  return { ...unsigned, proof: { ...proofConfig, proofValue: base58btc.encode(signature) } };
}

const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** Whether `context` starts with every item of `prefix`, in order (section 3.3.2 step 4.1). */
function startsWith(context: unknown, prefix: unknown): boolean {
  const doc = asArray(context);
  const proof = asArray(prefix);
  return proof.length <= doc.length && proof.every((item, i) => jcs(item) === jcs(doc[i]));
}

export type ProofVerdict = { ok: true } | { ok: false; message: string };

/**
 * Verify Proof (section 3.3.2) of one proof over `document` (the secured document without its
 * `proof`), given the verification method's Ed25519 public key. The proof's own `@context` is
 * the one hashed; it must be a prefix of the document's.
 */
export function verifyProof(document: Json, proof: Json, publicKey: KeyObject): ProofVerdict {
  const { proofValue, ...proofOptions } = proof;
  const unsecured: Json = { ...document };
  if (proofOptions['@context'] !== undefined) {
    if (!startsWith(document['@context'], proofOptions['@context'])) {
      return { ok: false, message: "the document's @context does not start with the proof's @context" };
    }
    unsecured['@context'] = proofOptions['@context'];
  }
  let signature: Uint8Array;
  try {
    if (String(proofValue).length > base58btcMaxLength(64)) throw new Error('longer than an Ed25519 signature');
    signature = base58btc.decode(String(proofValue));
  } catch {
    return { ok: false, message: 'proofValue is not multibase base58btc' };
  }
  if (signature.length === 64 && verify(null, hashData(unsecured, proofOptions), publicKey, signature)) return { ok: true };
  // Hearth signed over the document's @context but, before migration 102, returned the proof
  // without it: such a copy is told how to get the standard form, never accepted as it is.
  if (proofOptions['@context'] === undefined && signature.length === 64 &&
    verify(null, hashData(unsecured, { ...proofOptions, '@context': document['@context'] }), publicKey, signature)) {
    return { ok: false, message: "the proof has no @context: this is an early Hearth credential; fetch it again (GET /v1/claims/{id}) or add proof['@context'] equal to the credential's @context" };
  }
  return { ok: false, message: 'the signature does not match the credential: it was changed after signing or signed by another key' };
}

type Check = CredentialVerifyResult['checks'][number];
type CheckName = Check['check'];

/** The checks of a verified credential, in the order they run. */
export const CHECKS: CheckName[] = ['shape', 'cryptosuite', 'proof-dates', 'verification-method', 'issuer-match', 'signature', 'trusted-issuer', 'validity-period', 'status'];

export interface VerifyOptions {
  /** Validator DIDs this service vouches for. */
  trusted: Set<string>;
  now: Date;
  /** The status check of a credential whose signature and issuer hold; absent: no status to check. */
  status?: (credential: Json) => Promise<{ passed: boolean; message?: string }>;
}

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** A URL as VC 2.0 means one (WHATWG URL): what every id and evidence address of a credential must be. */
export const isUrl = (v: unknown): boolean => typeof v === 'string' && URL.canParse(v);

/** Why `value` (one or a set) is not objects each with a `type`, or undefined (VC 2.0 sections 4.10, 4.12, 5.5, 5.6). */
function typedObjectsError(name: string, value: unknown): string | undefined {
  for (const item of asArray(value)) {
    if (!isObject(item) || !('type' in item)) return `every ${name} must be an object with a type`;
    if ('id' in item && !isUrl(item.id)) return `${name}.id must be a URL`;
  }
  return undefined;
}

/**
 * Why a credential breaks the VC 2.0 data model (section 4) where a verifier must refuse it, or
 * undefined. Its dates are checked with the validity period; its proofs with the proof checks.
 */
function dataModelError(credential: Json, issuer: string | undefined): string | undefined {
  const context = credential['@context'];
  if (!Array.isArray(context) || context[0] !== VC_V2_CONTEXT) return `@context must be a list starting with ${VC_V2_CONTEXT}`;
  if (credential.id !== undefined && !isUrl(credential.id)) return 'id must be a URL';
  const { type } = credential;
  if (!(typeof type === 'string' || (Array.isArray(type) && type.every((t) => typeof t === 'string'))) || !asArray(type).includes('VerifiableCredential')) {
    return 'type must be VerifiableCredential or a list including it';
  }
  if (!isUrl(issuer)) return 'issuer must be a URL, or an object whose id is one';
  const subjects = credential.credentialSubject === undefined ? [] : asArray(credential.credentialSubject);
  if (!subjects.length) return 'credentialSubject is required';
  for (const subject of subjects) {
    if (!isObject(subject) || !Object.keys(subject).length) return 'every credentialSubject must be an object that makes a claim';
    if ('id' in subject && !isUrl(subject.id)) return 'credentialSubject.id must be a URL';
  }
  for (const name of ['credentialStatus', 'evidence', 'termsOfUse'] as const) {
    const error = credential[name] === undefined ? undefined : typedObjectsError(name, credential[name]);
    if (error) return error;
  }
  return undefined;
}

/** Why a proof's dates are unusable, or undefined (Data Integrity section 2.1: dateTimeStamp). */
function proofDatesError(proof: Json, now: Date): string | undefined {
  if (proof.created !== undefined && dateTimeStampMs(proof.created) === undefined) return `proof.created ${JSON.stringify(proof.created)} is not an XML Schema dateTimeStamp`;
  if (proof.expires !== undefined) {
    const expires = dateTimeStampMs(proof.expires);
    if (expires === undefined) return `proof.expires ${JSON.stringify(proof.expires)} is not an XML Schema dateTimeStamp`;
    if (expires < now.getTime()) return `the proof expired at ${proof.expires as string}`;
  }
  return undefined;
}

/** Why the credential is not valid at `now` (VC 2.0 section 4.9), or undefined. */
function validityError(credential: Json, now: Date): string | undefined {
  const at = now.getTime();
  const from = credential.validFrom === undefined ? undefined : dateTimeStampMs(credential.validFrom);
  const until = credential.validUntil === undefined ? undefined : dateTimeStampMs(credential.validUntil);
  if (credential.validFrom !== undefined && from === undefined) return `validFrom ${JSON.stringify(credential.validFrom)} is not an XML Schema dateTimeStamp`;
  if (credential.validUntil !== undefined && until === undefined) return `validUntil ${JSON.stringify(credential.validUntil)} is not an XML Schema dateTimeStamp`;
  if (from !== undefined && at < from) return `not valid before ${String(credential.validFrom)}`;
  if (until !== undefined && at > until) return `not valid after ${String(credential.validUntil)}`;
  return undefined;
}

/**
 * Verifies a credential and each proof of its proof set. verified is true only when every
 * proof holds, one is by the issuer, the issuer is trusted, `now` is within the validity
 * period and no status entry says revoked or suspended.
 */
export async function verifyCredential(credential: Json, opts: VerifyOptions): Promise<CredentialVerifyResult> {
  const checks: Check[] = [];
  const issuerField = credential.issuer;
  const issuerId = isObject(issuerField) ? issuerField.id : undefined;
  const issuer = typeof issuerField === 'string' ? issuerField : typeof issuerId === 'string' ? issuerId : undefined;
  const done = (): CredentialVerifyResult => ({
    verified: checks.length === CHECKS.length && checks.every((c) => c.passed),
    ...(issuer ? { issuer, trustedIssuer: opts.trusted.has(issuer) } : {}),
    checks,
  });
  const record = (check: CheckName, failure: string | undefined): boolean => {
    checks.push({ check, passed: !failure, ...(failure ? { message: failure } : {}) });
    return !failure;
  };
  const proofs = credential.proof === undefined ? [] : asArray(credential.proof);
  // Every proof of a set is checked; a failure names its proof when there are several.
  const eachProof = (check: CheckName, test: (proof: Json, i: number) => string | undefined): boolean => {
    const failures = proofs.map((p, i) => test(p as Json, i)).flatMap((m, i) => (m ? [proofs.length > 1 ? `proof[${i}]: ${m}` : m] : []));
    return record(check, failures.length ? failures.join('; ') : undefined);
  };

  const proofsOk = proofs.length > 0 && proofs.every((p) => isObject(p) && typeof p.proofValue === 'string');
  const shapeError = dataModelError(credential, issuer) ?? (proofsOk ? undefined : 'a proof or proof set is required, each proof with a proofValue');
  if (!record('shape', shapeError && `not a VC 2.0 verifiable credential: ${shapeError}`)) return done();

  if (!eachProof('cryptosuite', (p) =>
    p.type === 'DataIntegrityProof' && p.cryptosuite === 'eddsa-jcs-2022' && p.proofPurpose === 'assertionMethod'
      ? p.previousProof === undefined ? undefined : 'proof chains (previousProof) are not supported; a proof set is'
      : 'must be a DataIntegrityProof, cryptosuite eddsa-jcs-2022, purpose assertionMethod')) return done();
  if (!eachProof('proof-dates', (p) => proofDatesError(p, opts.now))) return done();

  const keys: Uint8Array[] = [];
  if (!eachProof('verification-method', (p, i) => {
    const [vmDid = '', fragment] = String((p.verificationMethod as string | undefined) ?? '').split('#');
    const key = publicKeyFromDidKey(vmDid);
    if (!key || fragment !== vmDid.slice('did:key:'.length)) return 'verificationMethod must be an Ed25519 did:key URL (did:key:z6Mk...#z6Mk...)';
    keys[i] = key;
    return undefined;
  })) return done();

  const signers = proofs.map((p) => String((p as Json).verificationMethod).split('#')[0]);
  if (!record('issuer-match', signers.includes(issuer) ? undefined : `issuer ${issuer} made none of the proofs (${signers.join(', ')})`)) return done();

  const { proof: _proof, ...document } = credential;
  if (!eachProof('signature', (p, i) => {
    const verdict = verifyProof(document, p, publicKeyFromRaw(keys[i]!));
    return verdict.ok ? undefined : verdict.message;
  })) return done();

  if (!record('trusted-issuer', opts.trusted.has(issuer!) ? undefined : `${issuer} is not a validator of this service`)) return done();
  if (!record('validity-period', validityError(credential, opts.now))) return done();
  const status = opts.status ? await opts.status(credential) : { passed: true };
  record('status', status.passed ? undefined : status.message ?? 'the credential is revoked or suspended');
  return done();
}
