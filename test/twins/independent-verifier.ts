// An independent eddsa-jcs-2022 implementation for tests: Digital Bazaar's cryptosuite with
// @digitalbazaar/data-integrity and jsonld-signatures, over an offline
// document loader that knows only the contexts given to it and did:key documents (resolved by
// @digitalbazaar/did-method-key).
import * as credentialsContext from '@digitalbazaar/credentials-context';
import dataIntegrityContext from '@digitalbazaar/data-integrity-context';
import { driver as didKeyDriver } from '@digitalbazaar/did-method-key';
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';
import { createSignCryptosuite, createVerifyCryptosuite } from '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
import multikeyContext from '@digitalbazaar/multikey-context';
import { checkStatus } from '@digitalbazaar/vc-bitstring-status-list';
import didContext from 'did-context';
import jsigs from 'jsonld-signatures';

const { AssertionProofPurpose } = jsigs.purposes;

type Doc = Record<string, unknown>;

const didKeys = didKeyDriver();
didKeys.use({ multibaseMultikeyHeader: 'z6Mk', fromMultibase: Ed25519Multikey.from });

/** A document loader that reads nothing from the network: the standard contexts, `extra`, and did:key documents. */
export function offlineLoader(extra: Record<string, unknown> = {}) {
  const docs = new Map<string, unknown>([
    ...(credentialsContext.contexts as Map<string, unknown>),
    ...(didContext.contexts as Map<string, unknown>),
    ...(multikeyContext.contexts as Map<string, unknown>),
    ...(dataIntegrityContext.contexts as Map<string, unknown>),
    ...Object.entries(extra),
  ]);
  return async (url: string) => {
    if (docs.has(url)) return { contextUrl: null, documentUrl: url, document: docs.get(url) };
    // did:key documents and their verification methods as Digital Bazaar's did:key driver resolves them.
    if (url.startsWith('did:key:')) return { contextUrl: null, documentUrl: url, document: (await didKeys.get({ url })) as unknown };
    throw new Error(`offline document loader: ${url} is not available`);
  };
}

/** Whether Digital Bazaar's verifier accepts the credential; its error when not. */
export async function independentVerify(vc: Doc, loader = offlineLoader()): Promise<{ verified: boolean; error?: unknown }> {
  const suite = new DataIntegrityProof({ cryptosuite: createVerifyCryptosuite() });
  const result = await jsigs.verify(structuredClone(vc), { suite, purpose: new AssertionProofPurpose(), documentLoader: loader });
  return { verified: result.verified, ...(result.verified ? {} : { error: result.error ?? result.results }) };
}

/**
 * Digital Bazaar's Bitstring Status List check of a credential: each entry's list credential
 * fetched (`fetchList`), its signature verified, its issuer matched with the credential's and
 * its bit read. The bit of each purpose (true: set), or the check's error.
 */
export async function independentStatusCheck(vc: Doc, fetchList: (url: string) => Promise<unknown>): Promise<{ verified: boolean; bits: Record<string, boolean>; error?: unknown }> {
  const offline = offlineLoader();
  const loader = async (url: string) => offline(url).catch(async () => ({ contextUrl: null, documentUrl: url, document: await fetchList(url) }));
  const suite = new DataIntegrityProof({ cryptosuite: createVerifyCryptosuite() });
  const result = (await checkStatus({ credential: structuredClone(vc), documentLoader: loader, suite, verifyBitstringStatusListCredential: true, verifyMatchingIssuers: true })) as {
    verified: boolean;
    results?: { credentialStatus: { statusPurpose: string }; status: boolean }[];
    error?: unknown;
  };
  const bits = Object.fromEntries((result.results ?? []).map((r) => [r.credentialStatus.statusPurpose, r.status]));
  return { verified: result.verified, bits, ...(result.error ? { error: result.error } : {}) };
}

/** Signs with Digital Bazaar's signer as the did:key of an Ed25519 seed. */
export async function independentSign(unsigned: Doc, seed: Uint8Array, loader = offlineLoader()): Promise<Doc> {
  const probe = await Ed25519Multikey.generate({ seed });
  const did = `did:key:${probe.publicKeyMultibase}`;
  const keyPair = await Ed25519Multikey.generate({ seed, id: `${did}#${probe.publicKeyMultibase}`, controller: did });
  const suite = new DataIntegrityProof({ signer: keyPair.signer(), cryptosuite: createSignCryptosuite() });
  return jsigs.sign(structuredClone(unsigned), { suite, purpose: new AssertionProofPurpose(), documentLoader: loader });
}

export const didKeyOfSeed = async (seed: Uint8Array) => `did:key:${(await Ed25519Multikey.generate({ seed })).publicKeyMultibase}`;
