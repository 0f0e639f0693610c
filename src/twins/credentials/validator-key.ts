// The validator's Ed25519 key, whose did:key signs KPT credentials. It comes from
// VALIDATOR_PRIVATE_KEY or is generated once and persisted in the database (shared by every
// instance); an existing key is never replaced, so credentials issued earlier stay verifiable.
import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { base58btc } from 'multiformats/bases/base58';
import type { Db } from '../../platform/db/index.ts';
import { parse32ByteKey } from '../../platform/key-bytes.ts';
import { findGeneratedSeed, recordConfiguredKey, storeGeneratedKeyIfNone, validatorKeyDids } from './validator-key.repository.ts';

export interface ValidatorKey {
  did: string;
  /** did:key:z6Mk...#z6Mk... */
  verificationMethod: string;
  privateKey: KeyObject;
}

// DER prefixes of an Ed25519 PKCS#8 private key and SPKI public key around the 32 raw bytes.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
// multicodec ed25519-pub (0xed) as an unsigned varint.
const ED25519_PUB_CODEC = Uint8Array.from([0xed, 0x01]);

/** 32-byte seed from hex (64 chars) or base64 / base64url (43-44 chars). */
export function parseSeed(text: string): Buffer {
  const seed = parse32ByteKey(text);
  if (!seed) throw new Error('VALIDATOR_PRIVATE_KEY must be a 32-byte Ed25519 seed, hex or base64');
  return seed;
}

export function privateKeyFromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

export function rawPublicKey(privateKey: KeyObject): Buffer {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return Buffer.from(jwk.x!, 'base64url');
}

export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

export function didKeyFromPublicKey(raw: Uint8Array): string {
  const bytes = new Uint8Array(ED25519_PUB_CODEC.length + raw.length);
  bytes.set(ED25519_PUB_CODEC);
  bytes.set(raw, ED25519_PUB_CODEC.length);
  return `did:key:${base58btc.encode(bytes)}`;
}

/**
 * The longest multibase base58btc text ('z' and its digits) of `bytes` bytes. Longer input is
 * refused before it is decoded: decoding takes time quadratic in its length, on the event loop
 * (a proofValue of some tens of thousands of characters would hold every request for seconds).
 */
export const base58btcMaxLength = (bytes: number) => 1 + Math.ceil((bytes * Math.log(256)) / Math.log(58));

/** The raw Ed25519 public key a did:key names, or undefined when it is not an Ed25519 did:key. */
export function publicKeyFromDidKey(did: string): Uint8Array | undefined {
  const m = /^did:key:(z[1-9A-HJ-NP-Za-km-z]+)$/.exec(did);
  if (!m || m[1]!.length > base58btcMaxLength(ED25519_PUB_CODEC.length + 32)) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = base58btc.decode(m[1]!);
  } catch {
    return undefined;
  }
  if (bytes.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) return undefined;
  return bytes.slice(2);
}

function keyFromSeed(seed: Buffer): ValidatorKey {
  const privateKey = privateKeyFromSeed(seed);
  const did = didKeyFromPublicKey(rawPublicKey(privateKey));
  return { did, verificationMethod: `${did}#${did.slice('did:key:'.length)}`, privateKey };
}

/** Loads (or, on the very first start without configuration, generates and persists) the key. */
export async function loadValidatorKey(db: Db, configuredSeed: string | undefined): Promise<ValidatorKey> {
  const now = new Date().toISOString();
  if (configuredSeed) {
    const key = keyFromSeed(parseSeed(configuredSeed));
    await recordConfiguredKey(db, { did: key.did, publicKey: key.did.slice('did:key:'.length), at: now });
    return key;
  }
  const existing = await findGeneratedSeed(db);
  if (existing) return keyFromSeed(Buffer.from(existing, 'hex'));
  const seed = randomBytes(32);
  const key = keyFromSeed(seed);
  // Two instances starting at once: exactly one generated key is stored; both then read it.
  await storeGeneratedKeyIfNone(db, { did: key.did, publicKey: key.did.slice('did:key:'.length), seedHex: seed.toString('hex'), at: now });
  return keyFromSeed(Buffer.from((await findGeneratedSeed(db))!, 'hex'));
}

/** DIDs of every validator key this service has used: the issuers it vouches for. */
export async function knownValidatorDids(db: Db): Promise<Set<string>> {
  return new Set(await validatorKeyDids(db));
}
