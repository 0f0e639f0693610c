// The only SQL for KPT claim collections. getCollection is also the read side of the chain
// query node (area C).
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, takeSeqTurn, type Sql } from '../../platform/db/sql.ts';
import type { Collection, EmissionParameters, SelectionDesign } from '../../../generated/openapi/types.gen.ts';
import type { KptCollections } from '../../../generated/db/tables.ts';

export type CollectionRow = KptCollections;

export function collectionFromRow(r: CollectionRow): Collection {
  return {
    id: r.id,
    name: r.name,
    ...(r.description ? { description: r.description } : {}),
    ...(r.selection_method ? { selectionMethod: r.selection_method } : {}),
    ...(r.selection_design ? { selectionDesign: JSON.parse(r.selection_design) as SelectionDesign } : {}),
    ...(r.emission_parameters ? { emissionParameters: JSON.parse(r.emission_parameters) as EmissionParameters } : {}),
    createdBy: r.created_by,
    submitters: JSON.parse(r.submitters) as string[],
    // SQLite keeps a boolean as 0 or 1.
    openToAll: Boolean(r.open_to_all),
    createdAt: r.created_at,
  };
}

export class CollectionRepository {
  constructor(private readonly db: Db) {}

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
      selection_design: c.selectionDesign ? JSON.stringify(c.selectionDesign) : null,
      emission_parameters: c.emissionParameters ? JSON.stringify(c.emissionParameters) : null,
      created_by: c.createdBy,
      submitters: JSON.stringify(c.submitters),
      open_to_all: c.openToAll,
      created_at: c.createdAt,
    };
    await inTransaction(this.db, async (sql) => {
      if (alsoStore) await alsoStore(sql);
      await takeSeqTurn(sql, 'kpt_collections');
      await sql('kpt_collections').insert(row);
    });
  }

  findById(id: string): Promise<Collection | undefined> {
    return findCollection(this.db, id);
  }

  /** Sets who besides its creator may submit into a collection, or whether every key may. */
  async setAccess(id: string, access: Pick<Collection, 'submitters' | 'openToAll'>): Promise<void> {
    await this.db('kpt_collections').update({ submitters: JSON.stringify(access.submitters), open_to_all: access.openToAll }).where('id', id);
  }

  /** Sets the parameters the collection's report computes its emission reductions with. */
  async setEmissionParameters(id: string, parameters: EmissionParameters): Promise<void> {
    await this.db('kpt_collections').update({ emission_parameters: JSON.stringify(parameters) }).where('id', id);
  }

  /** Declares the design of a collection that has none; false if it has one (a design never changes). */
  async declareDesign(id: string, design: SelectionDesign): Promise<boolean> {
    return (await this.db('kpt_collections').update({ selection_design: JSON.stringify(design) }).where('id', id).whereNull('selection_design')) > 0;
  }

  /** One page of collections with their `seq` (limit + 1 fetched so the caller knows whether more follow). */
  async list(afterSeq: number | undefined, limit: number): Promise<{ seq: number; collection: Collection }[]> {
    const q = this.db('kpt_collections');
    if (afterSeq !== undefined) q.where('seq', '>', afterSeq);
    const rows: CollectionRow[] = await q.orderBy('seq', 'asc').limit(limit + 1);
    return rows.map((r) => ({ seq: r.seq, collection: collectionFromRow(r) }));
  }
}

/** The collection, read in the caller's transaction (unlocked: only who may submit into it ever changes). */
export async function findCollection(sql: Sql, id: string): Promise<Collection | undefined> {
  const row = await sql('kpt_collections').where('id', id).first();
  return row && collectionFromRow(row);
}

/** One collection by id, or undefined. */
export function getCollection(db: Db, id: string): Promise<Collection | undefined> {
  return new CollectionRepository(db).findById(id);
}
