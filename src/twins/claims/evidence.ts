// Content-addressed evidence: the canonical JSON of a claim is stored under its CIDv1
// (raw codec, sha2-256, base32), the same CID `ipfs add --cid-version 1 --raw-leaves` gives
// for a single-block file, so an operator can pin the bytes to IPFS unchanged.
import { hash } from 'node:crypto';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { create as createDigest } from 'multiformats/hashes/digest';
import type { InputIssue } from '../../platform/domain-errors.ts';
import { isUrl } from '../credentials/credentials.ts';
import type { TwinEvidenceBlobs } from '../../../generated/db/tables.ts';

const SHA2_256 = 0x12;

/**
 * Where anyone holding a credential reads its evidence: the route is public, and the CID is
 * the capability (it hashes a record holding a random 122-bit claim id, so it cannot be guessed).
 */
export const evidenceUrl = (base: string, cid: string) => `${base}/v1/evidence/${cid}`;

export function cidOf(bytes: Uint8Array): string {
  const digest = createDigest(SHA2_256, hash('sha256', bytes, 'buffer'));
  return CID.createV1(raw.code, digest).toString();
}

/** Longer than any CID's text (a CIDv1 of a 64-byte digest is about 110 characters in base32). */
const CID_MAX_LENGTH = 200;

/**
 * Issues for each evidence address of a claim that is not a URL (it is signed into the
 * credential as an evidence id, which VC 2.0 requires to be one: the credential would never
 * verify), or an `ipfs://` one that does not start with a CID (`ipfs://<cid>[/path]`: it must
 * name content).
 */
/**
 * Whether a URL's `scheme://host[:port]` is as the URL standard serializes it (case aside): the
 * parser quietly reads `https:\\example.org` or a host `0x7f.1` as another URL, which RFC 3986
 * tools then refuse or read otherwise. One spelling per evidence id, as per DID.
 */
function authorityAsWritten(uri: string): boolean {
  const written = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(uri)?.[0];
  const url = URL.parse(uri);
  return !!written && !!url && written.toLowerCase() === `${url.protocol}//${url.host}`.toLowerCase();
}

export function evidenceAddressIssues(evidence: readonly { uri: string }[] | undefined): InputIssue[] {
  return (evidence ?? []).flatMap(({ uri }, i) => {
    const path = ['evidence', i, 'uri'];
    if (!isUrl(uri)) return [{ path, message: 'must be a URL (WHATWG URL: a host, port and escapes that parse)', rule: 'url' }];
    if (!authorityAsWritten(uri)) return [{ path, message: 'must spell its scheme and host as the URL standard writes them (no backslash, user info, or host the parser rewrites)', rule: 'url' }];
    if (!uri.startsWith('ipfs://')) return [];
    try {
      const cid = uri.slice('ipfs://'.length).split(/[/?#]/, 1)[0]!;
      // Base58 (CIDv0) decoding is quadratic in the text's length; a CID is far shorter.
      if (cid.length > CID_MAX_LENGTH) throw new Error('longer than a CID');
      CID.parse(cid);
      return [];
    } catch {
      return [{ path, message: 'must name a CID after ipfs:// (ipfs://<cid> or ipfs://<cid>/<path>)', rule: 'ipfs-cid' }];
    }
  });
}

export interface EvidenceBlob {
  cid: string;
  mediaType: string;
  bytes: Buffer;
}

export type EvidenceRow = TwinEvidenceBlobs;

/** Every column an evidence row sets (prepared inserts name them). */
export function evidenceRow(cid: string, content: string, mediaType = 'application/json'): EvidenceRow {
  return { cid, media_type: mediaType, content, size: Buffer.byteLength(content, 'utf8'), created_at: new Date().toISOString() };
}

/** Stores an evidence row; storing the same bytes again changes nothing. */
