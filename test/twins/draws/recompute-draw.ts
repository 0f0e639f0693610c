// An independent recomputation of a Hearth draw (GET /v1/collections/{id}/draws/{drawId}), from
// the algorithm as the contract states it and nothing of Hearth's code: SHA-256 from
// @noble/hashes (Hearth uses node:crypto), canonical JSON written here for the frame's shape
// (objects of strings: keys sorted by code unit, no whitespace). It checks the frame digest and
// the seed commitment and draws the households by stratum.
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils';

interface Member {
  household: string;
  stratum?: string;
}

export interface PublishedDraw {
  algorithm: string;
  frame: Member[];
  frameDigest: string;
  seed?: string | null;
  seedCommitment?: string | null;
  samples: { stratum?: string; sampleSize: number }[];
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const canonicalMember = (m: Member) =>
  `{${Object.keys(m)
    .sort(byCodeUnits)
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(m[k as keyof Member])}`)
    .join(',')}}`;
const hex = (text: string) => bytesToHex(sha256(utf8ToBytes(text)));

/** The problems found in the published inputs, and the households drawn by stratum. */
export function recomputeDraw(draw: PublishedDraw): { problems: string[]; drawn: Record<string, string[]> } {
  // The frame in the order of its households' UTF-8 bytes (for these DIDs, their code units).
  const frame = [...draw.frame].sort((a, b) => byCodeUnits(a.household, b.household));
  const problems: string[] = [];
  if (hex(`[${frame.map(canonicalMember).join(',')}]`) !== draw.frameDigest) problems.push('frame digest');
  const seed = draw.seed ?? undefined;
  if (seed !== undefined && bytesToHex(sha256(hexToBytes(seed))) !== draw.seedCommitment) problems.push('seed commitment');
  const sizes = new Map(draw.samples.map((s) => [s.stratum ?? '', s.sampleSize]));
  const strata = new Map<string, string[]>();
  for (const m of frame) {
    const households = strata.get(m.stratum ?? '') ?? [];
    households.push(m.household);
    strata.set(m.stratum ?? '', households);
  }
  const drawn: Record<string, string[]> = {};
  for (const [stratum, households] of strata) {
    if (draw.algorithm === 'hearth-census/1') {
      drawn[stratum] = households;
      continue;
    }
    const ranked = households.map((did) => ({ did, rank: hex(`${seed}:${stratum}:${did}`) })).sort((a, b) => byCodeUnits(a.rank, b.rank));
    drawn[stratum] = ranked.slice(0, sizes.get(stratum)).map((r) => r.did);
  }
  return { problems, drawn };
}
