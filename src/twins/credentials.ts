// W3C Verifiable Credentials Data Model 2.0 secured with a Data Integrity proof, cryptosuite
// eddsa-jcs-2022 (W3C "Data Integrity EdDSA Cryptosuites v1.0", section 3.3): RFC 8785 JCS
// canonicalisation, SHA-256, Ed25519, proofValue multibase base58btc. No JSON-LD, no network.
import { hash, sign, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { base58btc } from 'multiformats/bases/base58';
import type { CredentialVerifyResult, VerifiableCredential } from '../../generated/openapi/types.gen.ts';
import { publicKeyFromDidKey, publicKeyFromRaw, type ValidatorKey } from './validator-key.ts';

export const VC_V2_CONTEXT = 'https://www.w3.org/ns/credentials/v2';

type Unsigned = { [K in keyof VerifiableCredential as K extends 'proof' ? never : K]: VerifiableCredential[K] };
interface ProofOptions {
  type: 'DataIntegrityProof';
  cryptosuite: 'eddsa-jcs-2022';
  created: string;
  verificationMethod: string;
  proofPurpose: 'assertionMethod';
}

const sha256 = (s: string) => hash('sha256', s, 'buffer');

export function jcs(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError('value cannot be canonicalised');
  return out;
}

/** hashData = SHA-256(JCS(proof config with the document's @context)) || SHA-256(JCS(document)). */
function hashData(document: Record<string, unknown>, proofOptions: Record<string, unknown>): Buffer {
  const proofConfig = { ...proofOptions, '@context': document['@context'] };
  return Buffer.concat([sha256(jcs(proofConfig)), sha256(jcs(document))]);
}

const secondsPrecision = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export function signCredential(unsigned: Unsigned, key: ValidatorKey, now = new Date()): VerifiableCredential {
  const proofOptions: ProofOptions = {
    type: 'DataIntegrityProof',
    cryptosuite: 'eddsa-jcs-2022',
    created: secondsPrecision(now),
    verificationMethod: key.verificationMethod,
    proofPurpose: 'assertionMethod',
  };
  const signature = sign(null, hashData(unsigned, { ...proofOptions }), key.privateKey);
  return { ...unsigned, proof: { ...proofOptions, proofValue: base58btc.encode(signature) } };
}

type Check = CredentialVerifyResult['checks'][number];

/**
 * Verifies a credential's proof. `trusted` is the set of validator DIDs this service vouches
 * for; verified is true only when the signature holds and the issuer is one of them.
 */
export function verifyCredential(credential: Record<string, unknown>, trusted: Set<string>): CredentialVerifyResult {
  const checks: Check[] = [];
  const done = (): CredentialVerifyResult => ({
    verified: checks.length === 6 && checks.every((c) => c.passed),
    ...(issuer ? { issuer } : {}),
    ...(issuer ? { trustedIssuer: trusted.has(issuer) } : {}),
    checks,
  });
  const proof = credential.proof as Record<string, unknown> | undefined;
  const context = credential['@context'];
  const issuerField = credential.issuer as unknown;
  const issuerId = (issuerField as { id?: unknown } | undefined)?.id;
  const issuer: string | undefined = typeof issuerField === 'string' ? issuerField : typeof issuerId === 'string' ? issuerId : undefined;
  const shapeOk =
    Array.isArray(context) && context[0] === VC_V2_CONTEXT && typeof issuer === 'string' &&
    Array.isArray(credential.type) && (credential.type as unknown[]).includes('VerifiableCredential') &&
    !!proof && typeof proof === 'object' && !Array.isArray(proof) && typeof proof.proofValue === 'string';
  checks.push({ check: 'shape', passed: shapeOk, ...(shapeOk ? {} : { message: 'not a VC 2.0 credential with a proof (needs @context, type, issuer, proof.proofValue)' }) });
  if (!shapeOk) return done();

  const suiteOk = proof!.type === 'DataIntegrityProof' && proof!.cryptosuite === 'eddsa-jcs-2022' && proof!.proofPurpose === 'assertionMethod';
  checks.push({ check: 'cryptosuite', passed: suiteOk, ...(suiteOk ? {} : { message: 'proof must be a DataIntegrityProof, cryptosuite eddsa-jcs-2022, purpose assertionMethod' }) });
  if (!suiteOk) return done();

  const vm = String(proof!.verificationMethod ?? '');
  const [vmDid, fragment] = vm.split('#');
  const publicKey = vmDid ? publicKeyFromDidKey(vmDid) : undefined;
  const vmOk = !!publicKey && fragment === vmDid!.slice('did:key:'.length);
  checks.push({ check: 'verification-method', passed: vmOk, ...(vmOk ? {} : { message: 'verificationMethod must be an Ed25519 did:key URL (did:key:z6Mk...#z6Mk...)' }) });
  if (!vmOk) return done();

  const issuerOk = issuer === vmDid;
  checks.push({ check: 'issuer-match', passed: issuerOk, ...(issuerOk ? {} : { message: `issuer ${issuer} did not make the proof (${vmDid})` }) });
  if (!issuerOk) return done();

  const { proof: _proof, ...document } = credential;
  const { proofValue, ...proofOptions } = proof!;
  let signatureOk = false;
  try {
    const signature = base58btc.decode(String(proofValue));
    signatureOk = signature.length === 64 && verify(null, hashData(document, proofOptions), publicKeyFromRaw(publicKey!), signature);
  } catch {
    signatureOk = false;
  }
  checks.push({ check: 'signature', passed: signatureOk, ...(signatureOk ? {} : { message: 'the signature does not match the credential: it was changed after signing or signed by another key' }) });
  if (!signatureOk) return done();

  const trustedOk = trusted.has(issuer!);
  checks.push({ check: 'trusted-issuer', passed: trustedOk, ...(trustedOk ? {} : { message: `${issuer} is not a validator of this service` }) });
  return done();
}
