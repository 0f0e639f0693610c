// KPT claim collections (campaigns) and their campaign reports.
import type { Db } from '../platform/db/index.ts';
import type { Sql } from '../platform/db/sql.ts';
import { isUniqueViolation } from '../platform/db/index.ts';
import { conflictWith, notFoundError } from '../platform/domain-errors.ts';
import type { Principal } from '../platform/keys/service.ts';
import type { Collection, CollectionCreateRequest, CollectionPage, KptReport } from '../../generated/openapi/types.gen.ts';
import { ClaimRepository } from './claims.repository.ts';
import { CollectionRepository } from './collections.repository.ts';
import { CreationIdempotency, type Created } from './idempotency.ts';
import { decodeCursor, pageOf } from './paging.ts';
import { buildKptReport } from './report.ts';
import { assertMatchesSchema } from './schemas.ts';

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
    const collection: Collection = {
      id: input.id,
      name: input.name,
      ...(input.description ? { description: input.description } : {}),
      ...(input.selectionMethod ? { selectionMethod: input.selectionMethod } : {}),
      createdBy: principal.did,
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

  async list(opts: { cursor?: string; limit?: number }): Promise<CollectionPage> {
    const limit = opts.limit ?? 50;
    const rows = await new CollectionRepository(this.db).list(decodeCursor(opts.cursor), limit);
    return pageOf(rows, limit, (r) => r.collection);
  }

  /** The campaign report over the collection's verified claims. */
  async report(id: string): Promise<KptReport> {
    await this.get(id);
    return buildKptReport(id, await new ClaimRepository(this.db).findVerifiedInCollection(id));
  }
}
