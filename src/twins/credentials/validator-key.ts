// The validator's Ed25519 keys, whose did:keys sign KPT credentials. The current key comes from
// VALIDATOR_PRIVATE_KEY or is generated once and persisted in the database (shared by every
// instance); an existing key is never replaced, so credentials issued earlier stay verifiable.
// A key replaced by another (a new VALIDATOR_PRIVATE_KEY) is retired: it issues nothing new but
// still signs its status lists, from its seed in VALIDATOR_RETIRED_KEYS (or the database's, for
// the generated key).
import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { base58btc } from 'multiformats/bases/base58';
import type { Db } from '../../platform/db/index.ts';
import { parse32ByteKey } from '../../platform/key-bytes.ts';
import { invalidConfig } from '../../config.ts';
import { CredentialStatusRepository } from './credential-status.repository.ts';
import { findGeneratedSeed, makeCurrentKey, recordConfiguredKey, storeGeneratedKeyIfNone, validatorKeyDids } from './validator-key.repository.ts';

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

/** The current key, and every key whose seed this instance has: the signers of status lists. */
export interface ValidatorKeys {
  current: ValidatorKey;
  /** The key of `did` when this instance has its seed. */
  signer(did: string): ValidatorKey | undefined;
}

/**
 * The current key, made the database's current key (the one before it is retired), and the
 * seeds of retired keys: VALIDATOR_RETIRED_KEYS, and the generated key's from the database.
 * Refused, before anything is written, when a status list belongs to a key whose seed is
 * neither (its credentials' status could no longer be signed), or a retired seed names a key
 * this database never used.
 */
export async function loadValidatorKeys(db: Db, configuredSeed: string | undefined, retiredSeeds: readonly string[]): Promise<ValidatorKeys> {
  const keys = new Map<string, ValidatorKey>();
  const generated = await findGeneratedSeed(db);
  if (generated) {
    const key = keyFromSeed(Buffer.from(generated, 'hex'));
    keys.set(key.did, key);
  }
  const known = await knownValidatorDids(db);
  for (const seed of retiredSeeds) {
    const key = keyFromSeed(parseSeed(seed));
    if (!known.has(key.did)) throw invalidConfig('VALIDATOR_RETIRED_KEYS', `${key.did} is not a validator key this database has used`);
    keys.set(key.did, key);
  }
  const configured = configuredSeed ? keyFromSeed(parseSeed(configuredSeed)) : undefined;
  // Without a configured key the generated one is current: its seed is in the database, or it is new.
  const unsignable = (await new CredentialStatusRepository(db).listIssuers()).filter((did) => did !== configured?.did && !keys.has(did));
  if (unsignable.length) {
    throw invalidConfig(
      'VALIDATOR_RETIRED_KEYS',
      `status lists are signed by the validator key ${unsignable.join(', ')}, whose seed this instance is not given; add it (the earlier VALIDATOR_PRIVATE_KEY) so the status of its credentials stays signed by it, or set VALIDATOR_PRIVATE_KEY back to it`,
    );
  }
  const current = await loadValidatorKey(db, configuredSeed);
  await makeCurrentKey(db, current.did, new Date().toISOString());
  keys.set(current.did, current);
  return { current, signer: (did) => keys.get(did) };
}

/** DIDs of every validator key this service has used: the issuers it vouches for. */
export async function knownValidatorDids(db: Db): Promise<Set<string>> {
  return new Set(await validatorKeyDids(db));
}
