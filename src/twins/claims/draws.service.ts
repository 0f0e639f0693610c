// Draws of a campaign's households (KPT rule 5): created by the collection's creator over a
// frame it lists, committed (the seed's hash published with the frame), then revealed (the seed
// and the households drawn). A census of a full-population campaign is drawn at once. Draws
// never change; a redraw names the draw it replaces.
import { randomUUID } from 'node:crypto';
import type { Draw, DrawCreateRequest, DrawSample, FrameMember, SelectionDesign } from '../../../generated/openapi/types.gen.ts';
import { isUniqueViolation, type Db } from '../../platform/db/index.ts';
import { inTransaction, type Sql } from '../../platform/db/sql.ts';
import { drawPublished } from '../events/events.ts';
import { collectionOwner, openEventWrites, recordEvents } from '../events/events.repository.ts';
import { conflictWith, forbiddenAction, invalidInput, notFoundError, type InputIssue } from '../../platform/domain-errors.ts';
import type { Principal } from '../../platform/keys/service.ts';
import { CreationIdempotency, type CreationAnswer } from '../idempotency.ts';
import { assertMatchesSchema } from '../schemas.ts';
import { findCollection } from './collections.repository.ts';
import { CENSUS_ALGORITHM, censusSamples, DRAW_ALGORITHM, drawSamples, frameDigest, newSeed, seedCommitment, sortedFrame, strataOf } from './draws.ts';
import { DrawRepository, type StoredDraw } from './draws.repository.ts';

const newDrawId = () => `drw_${randomUUID().replaceAll('-', '')}`;
const invalid = (issues: InputIssue[]) => invalidInput('The body is not a valid draw', issues);

function toDraw(d: StoredDraw): Draw {
  const { row } = d;
  return {
    id: row.id,
    collectionId: row.collection_id,
    design: row.design as Draw['design'],
    algorithm: row.algorithm as Draw['algorithm'],
    status: row.status as Draw['status'],
    frame: d.frame,
    frameDigest: row.frame_digest,
    frameSize: row.frame_size,
    ...(row.seed_commitment ? { seedCommitment: row.seed_commitment } : {}),
    // The seed is stored when the draw is committed, and answered only once it is drawn.
    ...(row.status === 'drawn' && row.seed ? { seed: row.seed } : {}),
    samples: d.samples,
    ...(row.replaces ? { replaces: row.replaces } : {}),
    ...(d.replacedBy ? { replacedBy: d.replacedBy } : {}),
    createdBy: row.created_by,
    createdAt: row.created_at,
    ...(row.revealed_at ? { revealedAt: row.revealed_at } : {}),
  };
}

/** The households to draw in each stratum ('' for none), checked against the design and the frame. */
function sampleSizesOf(design: SelectionDesign, input: DrawCreateRequest): Record<string, number> {
  const issues: InputIssue[] = [];
  const stratified = design.type === 'stratified-random';
  const strata = new Set(design.strata ?? []);
  const seen = new Set<string>();
  input.frame.forEach((m, i) => {
    if (seen.has(m.household)) issues.push({ path: ['frame', i, 'household'], message: `${m.household} is listed twice`, rule: 'frame-unique' });
    seen.add(m.household);
    if (stratified && (m.stratum === undefined || !strata.has(m.stratum))) {
      issues.push({ path: ['frame', i, 'stratum'], message: `must be one of the design's strata (${[...strata].join(', ')})`, rule: 'frame-stratum' });
    } else if (!stratified && m.stratum !== undefined) {
      issues.push({ path: ['frame', i, 'stratum'], message: `a ${design.type} campaign has no strata`, rule: 'frame-stratum' });
    }
  });
  if (issues.length) throw invalid(issues);
  const frameSizes = new Map([...strataOf(input.frame)].map(([s, households]) => [s, households.length]));
  const sizeIssue = (path: (string | number)[], message: string) => issues.push({ path, message, rule: 'sample-size' });
  if (design.type === 'full-population') {
    if (input.sampleSize !== undefined || input.sampleSizes !== undefined) throw invalid([{ path: ['sampleSize'], message: 'a full-population campaign draws its whole frame (a census): no sample size', rule: 'sample-size' }]);
    return { '': input.frame.length };
  }
  if (design.type === 'simple-random') {
    if (input.sampleSizes !== undefined) sizeIssue(['sampleSizes'], 'a simple-random campaign has no strata: give sampleSize');
    if (input.sampleSize === undefined) sizeIssue(['sampleSize'], 'is required in a simple-random campaign');
    else if (input.sampleSize > input.frame.length) sizeIssue(['sampleSize'], `exceeds the frame's ${input.frame.length} households`);
    if (issues.length) throw invalid(issues);
    return { '': input.sampleSize! };
  }
  if (input.sampleSize !== undefined) sizeIssue(['sampleSize'], 'a stratified-random campaign gives sampleSizes, one per stratum');
  const sizes = input.sampleSizes ?? {};
  for (const stratum of strata) {
    const size = sizes[stratum];
    const inFrame = frameSizes.get(stratum) ?? 0;
    if (size === undefined) sizeIssue(['sampleSizes', stratum], 'is required (every stratum of the design)');
    else if (size > inFrame) sizeIssue(['sampleSizes', stratum], `exceeds the ${inFrame} households of the stratum in the frame`);
  }
  for (const stratum of Object.keys(sizes)) if (!strata.has(stratum)) sizeIssue(['sampleSizes', stratum], 'is not a stratum of the design');
  if (issues.length) throw invalid(issues);
  return sizes;
}

export class DrawService {
  private readonly idempotency: CreationIdempotency;

  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.idempotency = new CreationIdempotency(db, now);
  }

  /** create, unless the caller's Idempotency-Key was sent before (for this collection and body): then the first answer again. */
  async createOnce(principal: Principal, collectionId: string, input: DrawCreateRequest, idempotencyKey: string | undefined): Promise<CreationAnswer> {
    return this.idempotency.run(
      // The collection is part of the request: the key sent for another collection's draw is another body.
      idempotencyKey === undefined ? undefined : { principalDid: principal.did, operation: 'createDraw', key: idempotencyKey, body: { collectionId, draw: input } },
      async (bind) => {
        const draw = await this.create(principal, collectionId, input, bind && ((sql, created) => bind(sql, { resourceId: created.id, json: JSON.stringify(created) })));
        return { resourceId: draw.id, json: JSON.stringify(draw) };
      },
      async (drawId) => JSON.stringify(await this.get(collectionId, drawId)),
    );
  }

  /**
   * A new draw: committed (a random design) or drawn (a census); `storeWithDraw`: the caller's
   * writes (given the new draw) in its transaction. Throws DomainError: invalid, forbidden, not
   * found, conflict.
   */
  async create(principal: Principal, collectionId: string, input: DrawCreateRequest, storeWithDraw?: (sql: Sql, draw: Draw) => Promise<void>): Promise<Draw> {
    assertMatchesSchema<DrawCreateRequest>('DrawCreateRequest', input, 'draw');
    try {
      return await inTransaction(this.db, async (sql) => {
        await openEventWrites(sql);
        const design = await this.designToDraw(sql, principal, collectionId);
        const sizes = sampleSizesOf(design, input);
        const draws = new DrawRepository(sql);
        if (input.replaces) {
          const replaceable = await draws.replaceable(collectionId, input.replaces);
          if (replaceable === 'missing') throw invalid([{ path: ['replaces'], message: `names no draw of collection ${collectionId}`, rule: 'replaces-draw' }]);
          if (replaceable === 'replaced') throw alreadyReplaced(input.replaces);
        }
        const census = design.type === 'full-population';
        const seed = census ? undefined : newSeed();
        const frame: FrameMember[] = sortedFrame(input.frame);
        const samples: DrawSample[] = census ? censusSamples(frame) : drawSamples(frame, sizes, undefined);
        const at = this.now().toISOString();
        const id = newDrawId();
        await draws.insert(
          {
            id,
            collection_id: collectionId,
            design: design.type,
            algorithm: census ? CENSUS_ALGORITHM : DRAW_ALGORITHM,
            status: census ? 'drawn' : 'committed',
            frame_digest: frameDigest(frame),
            frame_size: frame.length,
            sample_sizes: JSON.stringify(sizes),
            seed_commitment: seed === undefined ? null : seedCommitment(seed),
            seed: seed ?? null,
            replaces: input.replaces ?? null,
            created_by: principal.did,
            created_at: at,
            revealed_at: census ? at : null,
          },
          frame,
          samples,
        );
        if (census) await recordEvents(sql, [drawPublished(id, collectionId, principal.did)], at);
        const draw = toDraw((await draws.find(collectionId, id))!);
        if (storeWithDraw) await storeWithDraw(sql, draw);
        return draw;
      });
    } catch (err) {
      // Two redraws of one draw at once: the second finds it replaced.
      if (isUniqueViolation(err) && input.replaces) throw alreadyReplaced(input.replaces);
      throw err;
    }
  }

  /** Publishes a committed draw's seed and the households it draws; a drawn draw is answered as it is. */
  async reveal(principal: Principal, collectionId: string, drawId: string): Promise<Draw> {
    return inTransaction(this.db, async (sql) => {
      await openEventWrites(sql);
      const draws = new DrawRepository(sql);
      const row = await draws.findForUpdate(collectionId, drawId);
      if (!row) throw notFoundError(`No draw ${drawId} in collection ${collectionId}.`);
      if (row.created_by !== principal.did) throw forbiddenAction(`Draw ${drawId} was made by ${row.created_by}; only it reveals the draw.`);
      if (row.status === 'committed') {
        const stored = (await draws.find(collectionId, drawId))!;
        const at = this.now().toISOString();
        await draws.reveal(drawId, at, drawSamples(stored.frame, JSON.parse(row.sample_sizes) as Record<string, number>, row.seed!));
        await recordEvents(sql, [drawPublished(drawId, collectionId, await collectionOwner(sql, collectionId))], at);
      }
      return toDraw((await draws.find(collectionId, drawId))!);
    });
  }

  async get(collectionId: string, drawId: string): Promise<Draw> {
    const stored = await new DrawRepository(this.db).find(collectionId, drawId);
    if (!stored) throw notFoundError(`No draw ${drawId} in collection ${collectionId}.`);
    return toDraw(stored);
  }

  /** The collection's design, when its creator may draw its households under it. */
  private async designToDraw(sql: Sql, principal: Principal, collectionId: string): Promise<SelectionDesign> {
    const collection = await findCollection(sql, collectionId);
    if (!collection) throw notFoundError(`No collection ${collectionId}.`);
    if (collection.createdBy !== principal.did) throw forbiddenAction(`Collection ${collectionId} was created by ${collection.createdBy}; only its creator draws its households.`);
    const design = collection.selectionDesign;
    const refuse = (message: string) => conflictWith(message, [], 'no-draw-in-design');
    if (!design) throw refuse(`Collection ${collectionId} declares no selection design; declare one first (PATCH /v1/collections/${collectionId} with selectionDesign).`);
    if (design.type === 'self-selected') throw refuse(`Collection ${collectionId} is self-selected: its households enrolled themselves, so none are drawn.`);
    if (design.frameSource === 'registered-households') throw refuse(`The frame of collection ${collectionId} is the households registered on the service: every one is in the campaign, none is drawn.`);
    return design;
  }
}

const alreadyReplaced = (drawId: string) =>
  conflictWith(`Draw ${drawId} is already replaced; a redraw replaces the draw that replaced it.`, [{ path: ['replaces'], message: 'is already replaced', rule: 'replaced-once' }], 'draw-replaced');
