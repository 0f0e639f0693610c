// Draws of a campaign's households, every input published so anyone can recompute them
// (hearth-draw-sha256-rank/1): each frame member is ranked by SHA-256 of
// `<seed hex>:<stratum>:<DID>` and the smallest ranks of each stratum are drawn. Ranking by a hash
// of the member instead of shuffling keeps the algorithm a few lines in any language, and a
// member's rank independent of the rest of the frame.
import { hash, randomBytes } from 'node:crypto';
import type { DrawSample, FrameMember } from '../../../generated/openapi/types.gen.ts';
import { jcs } from '../credentials/credentials.ts';

export const DRAW_ALGORITHM = 'hearth-draw-sha256-rank/1';
export const CENSUS_ALGORITHM = 'hearth-census/1';

const sha256hex = (data: string | Buffer) => hash('sha256', data, 'hex');
/** Ascending by UTF-16 code unit (DIDs, strata and hex ranks are ASCII, so by their bytes too). */
const ascending = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byHousehold = (a: FrameMember, b: FrameMember) => ascending(a.household, b.household);

/** The frame as published: sorted by household DID. */
export const sortedFrame = (frame: FrameMember[]): FrameMember[] => [...frame].sort(byHousehold);

/** SHA-256 of the RFC 8785 canonical JSON of the sorted frame, hex. */
export const frameDigest = (frame: FrameMember[]): string => sha256hex(jcs(sortedFrame(frame)));

/** 32 random bytes, hex. */
export const newSeed = (): string => randomBytes(32).toString('hex');

/** SHA-256 of the seed's bytes, hex: published before the seed. */
export const seedCommitment = (seedHex: string): string => sha256hex(Buffer.from(seedHex, 'hex'));

/** A frame member's rank in its stratum (the empty string when there are none). */
export const rankOf = (seedHex: string, stratum: string, household: string): string => sha256hex(`${seedHex}:${stratum}:${household}`);

/** Frame members by stratum ('' for none), strata in ascending order. */
export function strataOf(frame: FrameMember[]): Map<string, string[]> {
  const strata = new Map<string, string[]>();
  for (const m of sortedFrame(frame)) {
    const stratum = m.stratum ?? '';
    const households = strata.get(stratum);
    if (households) households.push(m.household);
    else strata.set(stratum, [m.household]);
  }
  return new Map([...strata].sort(([a], [b]) => ascending(a, b)));
}

/** The samples of a draw: `sizes` households of each stratum, the smallest ranks under `seedHex` (none drawn without a seed yet). */
export function drawSamples(frame: FrameMember[], sizes: Record<string, number>, seedHex: string | undefined): DrawSample[] {
  return [...strataOf(frame)].map(([stratum, households]) => {
    const sampleSize = sizes[stratum]!;
    const drawn = seedHex === undefined
      ? []
      : households
          .map((household) => ({ household, rank: rankOf(seedHex, stratum, household) }))
          .sort((a, b) => ascending(a.rank, b.rank))
          .slice(0, sampleSize)
          .map((m) => m.household);
    return { ...(stratum ? { stratum } : {}), frameSize: households.length, sampleSize, drawn };
  });
}

/** A census: every frame member drawn, in DID order. */
export const censusSamples = (frame: FrameMember[]): DrawSample[] => {
  const households = sortedFrame(frame).map((m) => m.household);
  return [{ frameSize: households.length, sampleSize: households.length, drawn: households }];
};
