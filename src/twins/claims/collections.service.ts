// KPT claim collections (campaigns) and their campaign reports.
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, type Sql } from '../../platform/db/sql.ts';
import { isUniqueViolation } from '../../platform/db/index.ts';
import { SYSTEM_DID } from './collections.ts';
import { conflictWith, forbiddenAction, invalidInput, notFoundError, type InputIssue } from '../../platform/domain-errors.ts';
import type { Principal } from '../../platform/keys/service.ts';
import type { Collection, CollectionCreateRequest, CollectionPage, CollectionUpdateRequest, KptReport, SelectionDesign } from '../../../generated/openapi/types.gen.ts';
import { ClaimRepository } from './claims.repository.ts';
import { CollectionRepository } from './collections.repository.ts';
import { DrawRepository } from './draws.repository.ts';
import { CreationIdempotency, type CreationAnswer } from '../idempotency.ts';
import { decodeCursor, pageOf } from '../paging.ts';
import { withParameterDefaults } from '../report/emission-reductions.ts';
import { buildKptReport } from '../report/report.ts';
import { assertMatchesSchema } from '../schemas.ts';

/**
 * Whether a principal's keys may submit claims into a collection: its creator's and its
 * submitters', or every key when it is open. A claim of one group verifies the other group's
 * claims and counts in the campaign report: a campaign is its creator's to open.
 */
/** A collection open to every key names no submitters: both at once would say two things. */
function assertOpenOrSubmitters(access: Pick<Collection, 'openToAll' | 'submitters'>): void {
  if (access.openToAll && access.submitters.length) {
    throw invalidInput('The body is not a valid collection', [
      { path: ['submitters'], message: 'names submitters of a collection open to every key (openToAll); leave one of them out', rule: 'open-or-submitters' },
    ]);
  }
}

/** A design whose parts fit its type: strata for a stratified draw only, the registered households as the frame of a census only. */
export function assertDesignFits(design: SelectionDesign | undefined): void {
  if (!design) return;
  const issues: InputIssue[] = [];
  const stratified = design.type === 'stratified-random';
  if (stratified !== (design.strata !== undefined)) {
    issues.push({ path: ['selectionDesign', 'strata'], message: stratified ? 'a stratified-random design names its strata' : `a ${design.type} design has no strata`, rule: 'design-strata' });
  }
  if (design.frameSource === 'registered-households' && design.type !== 'full-population') {
    issues.push({ path: ['selectionDesign', 'frameSource'], message: 'only a full-population design takes the registered households as its frame; a random draw lists its frame', rule: 'design-frame-source' });
  }
  if (issues.length) throw invalidInput('The body is not a valid collection', issues);
}

/** The design with its default filled in, as the HTTP validator fills it: callers in the process store the same. */
const designOf = (design: SelectionDesign | undefined): SelectionDesign | undefined => design && { ...design, frameSource: design.frameSource ?? 'draws' };

export class CollectionService {
  private readonly idempotency: CreationIdempotency;

  constructor(
    private readonly db: Db,
    now?: () => Date,
  ) {
    this.idempotency = new CreationIdempotency(db, now);
  }

  /** create, unless the caller's Idempotency-Key was sent before: then the first answer again. */
  async createOnce(principal: Principal, input: CollectionCreateRequest, idempotencyKey: string | undefined): Promise<CreationAnswer> {
    return this.idempotency.run(
      idempotencyKey === undefined ? undefined : { principalDid: principal.did, operation: 'createCollection', key: idempotencyKey, body: input },
      async (bind) => {
        const collection = await this.create(principal, input, bind && ((sql, created) => bind(sql, { resourceId: created.id, json: JSON.stringify(created) })));
        return { resourceId: collection.id, json: JSON.stringify(collection) };
      },
      async (id) => JSON.stringify(await this.get(id)),
    );
  }

  /** `storeWithCollection`: the caller's writes (given the new collection) in its transaction (both commit or neither). */
  async create(principal: Principal, input: CollectionCreateRequest, storeWithCollection?: (sql: Sql, collection: Collection) => Promise<void>): Promise<Collection> {
    assertMatchesSchema<CollectionCreateRequest>('CollectionCreateRequest', input, 'collection');
    assertOpenOrSubmitters({ openToAll: input.openToAll ?? false, submitters: input.submitters ?? [] });
    assertDesignFits(input.selectionDesign);
    const design = designOf(input.selectionDesign);
    const emissionParameters = input.emissionParameters && withParameterDefaults(input.emissionParameters);
    const collection: Collection = {
      id: input.id,
      name: input.name,
      ...(input.description ? { description: input.description } : {}),
      ...(input.selectionMethod ? { selectionMethod: input.selectionMethod } : {}),
      ...(design ? { selectionDesign: design } : {}),
      ...(emissionParameters ? { emissionParameters } : {}),
      createdBy: principal.did,
      submitters: input.submitters ?? [],
      openToAll: input.openToAll ?? false,
      createdAt: new Date().toISOString(),
    };
    try {
      await new CollectionRepository(this.db).insert(collection, storeWithCollection && ((sql) => storeWithCollection(sql, collection)));
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw conflictWith(`A collection ${input.id} exists.`, [{ path: ['id'], message: 'is taken', rule: 'collection-id-unique' }]);
      }
      throw err;
    }
    return collection;
  }

  async get(id: string): Promise<Collection> {
    const collection = await new CollectionRepository(this.db).findById(id);
    if (!collection) throw notFoundError(`No collection ${id}.`);
    return collection;
  }

  /**
   * A collection changed by its creator: who may submit into it (`submitters`, `openToAll`), each
   * when given, its emission parameters when given, and its selection design when it has none
   * yet (a declared design never changes).
   * The collections the service keeps (`default`, `ussd`) are no one's to change.
   */
  async update(principal: Principal, id: string, input: CollectionUpdateRequest): Promise<Collection> {
    assertMatchesSchema<CollectionUpdateRequest>('CollectionUpdateRequest', input, 'collection change');
    assertDesignFits(input.selectionDesign);
    const design = designOf(input.selectionDesign);
    const emissionParameters = input.emissionParameters && withParameterDefaults(input.emissionParameters);
    return inTransaction(this.db, async (sql) => {
      const repo = new CollectionRepository(sql);
      const collection = await repo.findById(id);
      if (!collection) throw notFoundError(`No collection ${id}.`);
      if (collection.createdBy !== principal.did) throw forbiddenAction(`Collection ${id} was created by ${collection.createdBy}; only its creator may change it.`);
      const access = { submitters: input.submitters ?? collection.submitters, openToAll: input.openToAll ?? collection.openToAll };
      assertOpenOrSubmitters(access);
      if (design && !(await repo.declareDesign(id, design))) {
        throw conflictWith(`Collection ${id} already declares its selection design; a design never changes (a new campaign is a new collection).`, [
          { path: ['selectionDesign'], message: 'is declared already', rule: 'design-declared-once' },
        ], 'design-declared-once');
      }
      await repo.setAccess(id, access);
      if (emissionParameters) await repo.setEmissionParameters(id, emissionParameters);
      return { ...collection, ...access, ...(design ? { selectionDesign: design } : {}), ...(emissionParameters ? { emissionParameters } : {}) };
    });
  }

  /**
   * A collection the migrations made for an area's own principal (`ussd`, for the USSD gateway):
   * that principal becomes its only submitter, replacing one configured before. A partner's
   * collection is its creator's to share: it is left as it is.
   */
  async entrustToArea(id: string, principalDid: string): Promise<Collection | undefined> {
    const collection = await new CollectionRepository(this.db).findById(id);
    if (!collection || collection.openToAll || collection.createdBy !== SYSTEM_DID || (collection.submitters.length === 1 && collection.submitters[0] === principalDid)) return collection;
    await new CollectionRepository(this.db).setAccess(id, { submitters: [principalDid], openToAll: false });
    return { ...collection, submitters: [principalDid] };
  }

  async list(opts: { cursor?: string; limit?: number }): Promise<CollectionPage> {
    const limit = opts.limit ?? 50;
    const rows = await new CollectionRepository(this.db).list(decodeCursor(opts.cursor), limit);
    return pageOf(rows, limit, (r) => r.collection);
  }

  /** The campaign report over the collection's verified claims whose credentials stand, with how their households were selected. */
  async report(id: string): Promise<KptReport> {
    const collection = await this.get(id);
    const claims = new ClaimRepository(this.db);
    const { counted, withdrawn } = await claims.findVerifiedInCollection(id);
    const selection = {
      design: collection.selectionDesign ?? null,
      draws: await new DrawRepository(this.db).current(id),
      claimsHeldApart: await claims.countRejectedOnSelection(id),
    };
    return buildKptReport(id, counted, { withdrawn, selection, emissionParameters: collection.emissionParameters });
  }
}
