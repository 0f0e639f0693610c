// The only SQL for twin entities and their relationship links. The page functions at the end
// are also the read side of the chain query node (area C).
import type { Knex } from 'knex';
import type { Db } from '../platform/db/index.ts';
import { forShare, forUpdate, sqlOf, takeSeqTurn, type CommitOrder, type Sql } from '../platform/db/sql.ts';
import type { Entity } from '../../generated/openapi/types.gen.ts';

export interface EntityRow {
  seq: number;
  did: string;
  type: string;
  protocol_did: string | null;
  controller: string;
  properties: string;
  relationships: string;
  services: string;
  verifiable_credentials: string;
  created_at: string;
  updated_at: string;
}

export type NewEntityRow = Omit<EntityRow, 'seq'>;

export function entityFromRow(r: EntityRow): Entity {
  return {
    did: r.did,
    type: r.type,
    ...(r.protocol_did ? { protocol: r.protocol_did } : {}),
    controller: r.controller,
    properties: JSON.parse(r.properties),
    relationships: JSON.parse(r.relationships),
    services: JSON.parse(r.services),
    verifiableCredential: JSON.parse(r.verifiable_credentials),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export interface EntityFilter {
  type?: string;
  protocol?: string;
  controller?: string;
  relatedTo?: string;
  role?: string;
  afterSeq?: number;
  limit: number;
}

/** One entity row by DID, in plain SQL (platform/db/sql.ts). */
export function findEntityRow(sql: Sql, did: string): Promise<EntityRow | undefined> {
  return sql.one<EntityRow>('select * from twin_entities where did = ?', [did]);
}

/**
 * The row, which no other transaction may change until this one ends; a change in flight is
 * waited for and seen (a claim checks its household's controller against the latest one).
 */
export function findEntityRowForShare(sql: Sql, did: string): Promise<EntityRow | undefined> {
  return sql.one<EntityRow>(`select * from twin_entities where did = ?${forShare(sql)}`, [did]);
}

export class EntityRepository {
  constructor(private readonly db: Db | Knex.Transaction) {}

  async findByDid(did: string): Promise<EntityRow | undefined> {
    return findEntityRow(sqlOf(this.db), did);
  }

  /** The row, locked until the transaction ends (see forUpdate). */
  async findByDidForUpdate(did: string): Promise<EntityRow | undefined> {
    const sql = sqlOf(this.db);
    return sql.one<EntityRow>(`select * from twin_entities where did = ?${forUpdate(sql)}`, [did]);
  }

  async findManyByDid(dids: string[]): Promise<EntityRow[]> {
    if (!dids.length) return [];
    return this.db<EntityRow>('twin_entities').whereIn('did', dids);
  }

  /** Inserts the entity and its relationship links (call inside a transaction: it takes the table's `seq` turn). */
  async insert(row: NewEntityRow, links: Record<string, string>): Promise<void> {
    await takeSeqTurn(sqlOf(this.db), 'twin_entities');
    await this.db('twin_entities').insert(row);
    await this.replaceLinks(row.did, links);
  }

  async update(did: string, patch: Partial<NewEntityRow>, links?: Record<string, string>): Promise<void> {
    await this.db('twin_entities').where({ did }).update(patch);
    if (links) await this.replaceLinks(did, links);
  }

  private async replaceLinks(did: string, links: Record<string, string>): Promise<void> {
    await this.db('twin_relationships').where({ subject_did: did }).delete();
    const rows = Object.entries(links).map(([role, object]) => ({ subject_did: did, role, object_did: object }));
    if (rows.length) await this.db('twin_relationships').insert(rows);
  }

  /** rows of one page (limit + 1 fetched so the caller knows whether more follow). */
  async list(f: EntityFilter): Promise<EntityRow[]> {
    const q = this.db<EntityRow>('twin_entities').select('twin_entities.*');
    if (f.type) q.where('type', f.type);
    if (f.protocol) q.where('protocol_did', f.protocol);
    if (f.controller) q.where('controller', f.controller);
    if (f.relatedTo) {
      q.whereExists((sub) => {
        sub
          .from('twin_relationships')
          .whereRaw('twin_relationships.subject_did = twin_entities.did')
          .where('twin_relationships.object_did', f.relatedTo!);
        if (f.role) sub.where('twin_relationships.role', f.role);
      });
    }
    if (f.afterSeq !== undefined) q.where('seq', '>', f.afterSeq);
    return q.orderBy('seq', 'asc').limit(f.limit + 1);
  }
}

// ---- read side for the chain query node (area C) -------------------------------------------

export interface KeyOrOffsetPage {
  /** Opaque next-key from the previous page (key paging); takes precedence over offset. */
  key?: string;
  offset?: number;
  limit: number;
  /** Also count every row (Cosmos PageRequest.count_total). */
  countTotal?: boolean;
}

export interface PagedResult<T> {
  items: T[];
  /** Pass as `key` for the next page; absent on the last page. */
  nextKey?: string;
  total?: number;
}

/**
 * Shared by the page functions: key = last row's seq as a decimal string. `order` is the
 * table's commit order (commitOrder in sql.ts; by default `seq`, which is commit order for
 * tables that take the seq turn).
 */
export async function pageBySeq<R extends { seq: number }, T>(
  base: () => Knex.QueryBuilder,
  page: KeyOrOffsetPage,
  map: (r: R) => T,
  order?: CommitOrder,
): Promise<PagedResult<T>> {
  const visible = () => (order?.horizon ? base().whereRaw(order.horizon) : base());
  const q = visible().select('*').limit(page.limit + 1);
  if (order) q.orderByRaw(order.orderBy('asc'));
  else q.orderBy('seq', 'asc');
  if (page.key !== undefined && page.key !== '') {
    const after = Number(page.key);
    if (!Number.isSafeInteger(after)) throw new RangeError(`pagination key ${page.key} is not one this service issued`);
    if (order) q.whereRaw(order.relativeTo('>'), [after]);
    else q.where('seq', '>', after);
  } else if (page.offset) {
    q.offset(page.offset);
  }
  const rows = (await q) as R[];
  const kept = rows.slice(0, page.limit);
  const last = kept[kept.length - 1];
  let total: number | undefined;
  if (page.countTotal) {
    const c = await visible().count({ n: '*' }).first();
    total = Number((c as { n: number | string }).n);
  }
  return {
    items: kept.map(map),
    ...(rows.length > page.limit && last ? { nextKey: String(last.seq) } : {}),
    ...(total !== undefined ? { total } : {}),
  };
}

/** Every entity, in creation order, by key or by offset, optionally with the total count. */
export function pageEntities(db: Db, page: KeyOrOffsetPage): Promise<PagedResult<Entity>> {
  return pageBySeq<EntityRow, Entity>(() => db('twin_entities'), page, entityFromRow);
}

/** One entity by DID, or undefined. */
export async function findEntityByDid(db: Db, did: string): Promise<Entity | undefined> {
  const row = await new EntityRepository(db).findByDid(did);
  return row ? entityFromRow(row) : undefined;
}
