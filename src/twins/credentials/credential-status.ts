// W3C Bitstring Status List v1.0: each credential has one index, the same in the revocation and
// the suspension list; a set bit at that index means revoked (for good) or suspended (until
// reinstated). Lists hold 131,072 entries (16 KiB, the specification's minimum for group
// privacy); index i is entry i mod 131,072 of list floor(i / 131,072).
import { gzipSync } from 'node:zlib';
import type { PublicBase } from './kpt-context.ts';

export const STATUS_LIST_SIZE = 131_072;
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

/** The global status index an entry names when it points at a list of the deployment at `base`, or why it does not. */
export function indexOfEntry(base: PublicBase, entry: unknown): { purpose: StatusPurpose; index: number } | { error: string } {
  const e = entry as Partial<Record<keyof StatusListEntry, unknown>> | null;
  if (!e || typeof e !== 'object' || e.type !== 'BitstringStatusListEntry') return { error: 'a credentialStatus entry is not a BitstringStatusListEntry' };
  const purpose = STATUS_PURPOSES.find((p) => p === e.statusPurpose);
  if (!purpose) return { error: `statusPurpose ${JSON.stringify(e.statusPurpose)} is not revocation or suspension` };
  const m = typeof e.statusListCredential === 'string' ? /^(.*)\/v1\/credentials\/status\/([a-z]+)\/(0|[1-9][0-9]{0,4})$/.exec(e.statusListCredential) : null;
  if (!m || m[1] !== base || m[2] !== purpose || Number(m[3]) > MAX_STATUS_LIST) {
    return { error: `status list ${String(e.statusListCredential)} is not a ${purpose} list this service publishes, so its status cannot be checked here` };
  }
  const position = typeof e.statusListIndex === 'string' && /^(0|[1-9][0-9]*)$/.test(e.statusListIndex) ? Number(e.statusListIndex) : NaN;
  if (!(position < STATUS_LIST_SIZE)) return { error: `statusListIndex ${JSON.stringify(e.statusListIndex)} is not an entry of the list (0..${STATUS_LIST_SIZE - 1})` };
  return { purpose, index: Number(m[3]) * STATUS_LIST_SIZE + position };
}
