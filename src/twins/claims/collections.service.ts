// KPT claim collections (campaigns) and their campaign reports.
import type { Db } from '../../platform/db/index.ts';
import type { Sql } from '../../platform/db/sql.ts';
import { isUniqueViolation } from '../../platform/db/index.ts';
import { SYSTEM_DID } from './collections.ts';
import { conflictWith, forbiddenAction, invalidInput, notFoundError } from '../../platform/domain-errors.ts';
import type { Principal } from '../../platform/keys/service.ts';
import type { Collection, CollectionCreateRequest, CollectionPage, CollectionUpdateRequest, KptReport } from '../../../generated/openapi/types.gen.ts';
import { ClaimRepository } from './claims.repository.ts';
import { CollectionRepository } from './collections.repository.ts';
import { CreationIdempotency, type Created } from '../idempotency.ts';
import { decodeCursor, pageOf } from '../paging.ts';
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

export function maySubmitInto(collection: Collection, principalDid: string): boolean {
  return collection.openToAll || collection.createdBy === principalDid || collection.submitters.includes(principalDid);
}

export class CollectionService {
  private readonly idempotency: CreationIdempotency;

  constructor(
    private readonly db: Db,
    now?: () => Date,
  ) {
    this.idempotency = new CreationIdempotency(db, now);
  }

  /** create, unless the caller's Idempotency-Key names a collection already: then that one. */
  async createOnce(principal: Principal, input: CollectionCreateRequest, idempotencyKey: string | undefined): Promise<Created<Collection>> {
    return this.idempotency.run(
      idempotencyKey === undefined ? undefined : { principalDid: principal.did, operation: 'createCollection', key: idempotencyKey, body: input },
      (bind) => this.create(principal, input, bind && ((sql) => bind(sql, input.id))),
      (id) => this.get(id),
    );
  }

  /** `storeWithCollection`: the caller's writes in the collection's transaction (both commit or neither). */
  async create(principal: Principal, input: CollectionCreateRequest, storeWithCollection?: (sql: Sql) => Promise<void>): Promise<Collection> {
    assertMatchesSchema<CollectionCreateRequest>('CollectionCreateRequest', input, 'collection');
    assertOpenOrSubmitters({ openToAll: input.openToAll ?? false, submitters: input.submitters ?? [] });
    const collection: Collection = {
      id: input.id,
      name: input.name,
      ...(input.description ? { description: input.description } : {}),
      ...(input.selectionMethod ? { selectionMethod: input.selectionMethod } : {}),
      createdBy: principal.did,
      submitters: input.submitters ?? [],
      openToAll: input.openToAll ?? false,
      createdAt: new Date().toISOString(),
    };
    try {
      await new CollectionRepository(this.db).insert(collection, storeWithCollection);
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
   * Who may submit into a collection, changed by its creator: `submitters` and `openToAll`, each
   * when given. The collections the service keeps (`default`, `ussd`) are no one's to change.
   */
  async updateAccess(principal: Principal, id: string, input: CollectionUpdateRequest): Promise<Collection> {
    assertMatchesSchema<CollectionUpdateRequest>('CollectionUpdateRequest', input, 'collection change');
    const repo = new CollectionRepository(this.db);
    const collection = await repo.findById(id);
    if (!collection) throw notFoundError(`No collection ${id}.`);
    if (collection.createdBy !== principal.did) throw forbiddenAction(`Collection ${id} was created by ${collection.createdBy}; only its creator may change who submits into it.`);
    const access = { submitters: input.submitters ?? collection.submitters, openToAll: input.openToAll ?? collection.openToAll };
    assertOpenOrSubmitters(access);
    await repo.setAccess(id, access);
    return { ...collection, ...access };
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

  /** The campaign report over the collection's verified claims whose credentials stand. */
  async report(id: string): Promise<KptReport> {
    await this.get(id);
    const { counted, withdrawn } = await new ClaimRepository(this.db).findVerifiedInCollection(id);
    return buildKptReport(id, counted, { withdrawn });
  }
}
