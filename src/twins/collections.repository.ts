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
  async insert(row: Omit<CollectionRow, 'seq'>, alsoStore?: (sql: Sql) => Promise<void>): Promise<void> {
    await this.db.transaction(async (trx) => {
      if (alsoStore) await alsoStore(sqlOf(trx));
      await takeSeqTurn(sqlOf(trx), 'kpt_collections');
      await trx('kpt_collections').insert(row);
    });
  }

  async findById(id: string): Promise<CollectionRow | undefined> {
    return this.db<CollectionRow>('kpt_collections').where({ id }).first();
  }

  async list(afterSeq: number | undefined, limit: number): Promise<CollectionRow[]> {
    const q = this.db<CollectionRow>('kpt_collections').select('*');
    if (afterSeq !== undefined) q.where('seq', '>', afterSeq);
    return q.orderBy('seq', 'asc').limit(limit + 1);
  }
}

/** The collection, read in the caller's transaction (unlocked: a collection never changes once created). */
export function findCollection(sql: Sql, id: string): Promise<CollectionRow | undefined> {
  return sql.one<CollectionRow>('select * from kpt_collections where id = ?', [id]);
}

/** One collection by id, or undefined. */
export async function getCollection(db: Db, id: string): Promise<Collection | undefined> {
  const row = await new CollectionRepository(db).findById(id);
  return row ? collectionFromRow(row) : undefined;
}
