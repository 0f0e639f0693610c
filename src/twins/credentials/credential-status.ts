// W3C Bitstring Status List v1.0: each credential has one index, the same in the revocation and
// the suspension list; a set bit at that index means revoked (for good) or suspended (until
// reinstated). Lists hold 131,072 entries (16 KiB, the specification's minimum for group
// privacy); index i is entry i mod 131,072 of list floor(i / 131,072). Each list belongs to one
// validator key and one public base URL, and hands its positions out in an order no one outside
// can tell from the order credentials were issued in (the specification's herd privacy).
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { PublicBase } from './kpt-context.ts';

export const STATUS_LIST_SIZE = 131_072;
/** How long a verifier may cache a list (its credentialSubject.ttl and Cache-Control). */
export const STATUS_LIST_TTL_MS = 300_000;
const DAY_MS = 86_400_000;
/** A list's validUntil when signed at `now`: the end of the next UTC day (a copy is refused after; it is signed again daily). */
export const statusListValidUntil = (now: Date) => new Date((Math.floor(now.getTime() / DAY_MS) + 2) * DAY_MS).toISOString();
/** Indexes are 32-bit database integers: lists 0..16383. */
export const MAX_STATUS_LIST = Math.floor((2 ** 31 - 1) / STATUS_LIST_SIZE) - 1;
export const STATUS_PURPOSES = ['revocation', 'suspension'] as const;
export type StatusPurpose = (typeof STATUS_PURPOSES)[number];

export const statusListPath = (purpose: StatusPurpose, list: number) => `/v1/credentials/status/${purpose}/${list}`;
export const statusListUrl = (base: PublicBase, purpose: StatusPurpose, list: number) => `${base}${statusListPath(purpose, list)}`;

export interface StatusListEntry {
  id: string;
  type: 'BitstringStatusListEntry';
  statusPurpose: StatusPurpose;
  statusListIndex: string;
  statusListCredential: string;
}

/** The credentialStatus of the credential with status index `index`: one entry per purpose. */
export function statusEntries(base: PublicBase, index: number): StatusListEntry[] {
  const list = Math.floor(index / STATUS_LIST_SIZE);
  const position = index % STATUS_LIST_SIZE;
  return STATUS_PURPOSES.map((purpose) => ({
    id: `${statusListUrl(base, purpose, list)}#${position}`,
    type: 'BitstringStatusListEntry',
    statusPurpose: purpose,
    statusListIndex: String(position),
    statusListCredential: statusListUrl(base, purpose, list),
  }));
}

/** encodedList: multibase base64url (no padding, prefix "u") of the GZIP of the bitstring; entry 0 is the first byte's most significant bit. */
export function encodeStatusList(setPositions: Iterable<number>): string {
  const bits = Buffer.alloc(STATUS_LIST_SIZE / 8);
  for (const p of setPositions) bits[p >> 3]! |= 0x80 >> (p & 7);
  return `u${gzipSync(bits).toString('base64url')}`;
}

/** The global status index an entry names, with the list and the base URL it names it under, or why it names none. */
export function indexOfEntry(entry: unknown): { purpose: StatusPurpose; index: number; list: number; base: PublicBase } | { error: string } {
  const e = entry as Partial<Record<keyof StatusListEntry, unknown>> | null;
  if (!e || typeof e !== 'object' || e.type !== 'BitstringStatusListEntry') return { error: 'a credentialStatus entry is not a BitstringStatusListEntry' };
  const purpose = STATUS_PURPOSES.find((p) => p === e.statusPurpose);
  if (!purpose) return { error: `statusPurpose ${JSON.stringify(e.statusPurpose)} is not revocation or suspension` };
  const m = typeof e.statusListCredential === 'string' ? /^(.*)\/v1\/credentials\/status\/([a-z]+)\/(0|[1-9][0-9]{0,4})$/.exec(e.statusListCredential) : null;
  if (!m || m[2] !== purpose || Number(m[3]) > MAX_STATUS_LIST) {
    return { error: `status list ${String(e.statusListCredential)} is not a ${purpose} list this service publishes, so its status cannot be checked here` };
  }
  const position = typeof e.statusListIndex === 'string' && /^(0|[1-9][0-9]*)$/.test(e.statusListIndex) ? Number(e.statusListIndex) : NaN;
  if (!(position < STATUS_LIST_SIZE)) return { error: `statusListIndex ${JSON.stringify(e.statusListIndex)} is not an entry of the list (0..${STATUS_LIST_SIZE - 1})` };
  const list = Number(m[3]);
  return { purpose, index: list * STATUS_LIST_SIZE + position, list, base: m[1]! };
}

// A keyed permutation of 18-bit numbers (a four-round Feistel network over two 9-bit halves,
// HMAC-SHA256 as its round function), walked until it lands in the list: a bijection of
// 0..131,071, so positions handed out in order land at distinct, unpredictable places.
const HALF_BITS = 9;
const HALF_MASK = (1 << HALF_BITS) - 1;

function feistel(key: Buffer, x: number): number {
  let left = x >> HALF_BITS;
  let right = x & HALF_MASK;
  for (let round = 0; round < 4; round++) {
    const f = createHmac('sha256', key).update(Buffer.from([round, right >> 8, right & 0xff])).digest().readUInt16BE(0) & HALF_MASK;
    [left, right] = [right, left ^ f];
  }
  return (left << HALF_BITS) | right;
}

/** The position in its list of the `n`th credential given one: `n` itself for a list without a key (made before lists were spread). */
export function spreadPosition(key: Buffer | null, n: number): number {
  if (!key) return n;
  let x = n;
  do x = feistel(key, x);
  while (x >= STATUS_LIST_SIZE);
  return x;
}
