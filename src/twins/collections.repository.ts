// The only SQL for KPT claim collections. getCollection is also the read side of the chain
// query node (area C).
import type { Knex } from 'knex';
import type { Db } from '../platform/db/index.ts';
import { sqlOf, takeSeqTurn, type Sql } from '../platform/db/sql.ts';
import type { Collection } from '../../generated/openapi/types.gen.ts';

export interface CollectionRow {
  seq: number;
  id: string;
  name: string;
  description: string | null;
  selection_method: string | null;
  created_by: string;
  created_at: string;
}

export function collectionFromRow(r: CollectionRow): Collection {
  return {
    id: r.id,
    name: r.name,
    ...(r.description ? { description: r.description } : {}),
    ...(r.selection_method ? { selectionMethod: r.selection_method } : {}),
    createdBy: r.created_by,
    createdAt: r.created_at,
  };
}

export class CollectionRepository {
  constructor(private readonly db: Db | Knex.Transaction) {}

  /**
   * Inserts a collection in a transaction of its own, which takes the table's `seq` turn;
   * `alsoStore` writes in the same transaction, before the turn is taken.
   */
  async insert(c: Collection, alsoStore?: (sql: Sql) => Promise<void>): Promise<void> {
    const row: Omit<CollectionRow, 'seq'> = {
      id: c.id,
      name: c.name,
      description: c.description ?? null,
      selection_method: c.selectionMethod ?? null,
      created_by: c.createdBy,
      created_at: c.createdAt,
    };
    await this.db.transaction(async (trx) => {
      if (alsoStore) await alsoStore(sqlOf(trx));
      await takeSeqTurn(sqlOf(trx), 'kpt_collections');
      await trx('kpt_collections').insert(row);
    });
  }

  async findById(id: string): Promise<Collection | undefined> {
    const row = await this.db<CollectionRow>('kpt_collections').where({ id }).first();
    return row && collectionFromRow(row);
  }

  /** One page of collections with their `seq` (limit + 1 fetched so the caller knows whether more follow). */
  async list(afterSeq: number | undefined, limit: number): Promise<{ seq: number; collection: Collection }[]> {
    const q = this.db<CollectionRow>('kpt_collections').select('*');
    if (afterSeq !== undefined) q.where('seq', '>', afterSeq);
    const rows = await q.orderBy('seq', 'asc').limit(limit + 1);
    return rows.map((r) => ({ seq: r.seq, collection: collectionFromRow(r) }));
  }
}

/** The collection, read in the caller's transaction (unlocked: a collection never changes once created). */
export function findCollection(sql: Sql, id: string): Promise<CollectionRow | undefined> {
  return sql.one<CollectionRow>('select * from kpt_collections where id = ?', [id]);
}

/** One collection by id, or undefined. */
export function getCollection(db: Db, id: string): Promise<Collection | undefined> {
  return new CollectionRepository(db).findById(id);
}
