// The only SQL for twin entities and their relationship links (but area A's read port, read-port.repository.ts).
import type { Db } from '../../platform/db/index.ts';
import { takeSeqTurn, type Sql } from '../../platform/db/sql.ts';
import type { Entity } from '../../../generated/openapi/types.gen.ts';
import type { TwinEntities } from '../../../generated/db/tables.ts';

export type EntityRow = TwinEntities;

export function entityFromRow(r: EntityRow): Entity {
  return {
    did: r.did,
    type: r.type,
    ...(r.protocol_did ? { protocol: r.protocol_did } : {}),
    controller: r.controller,
    properties: JSON.parse(r.properties) as Entity['properties'],
    relationships: JSON.parse(r.relationships) as Entity['relationships'],
    services: JSON.parse(r.services) as Entity['services'],
    verifiableCredential: JSON.parse(r.verifiable_credentials) as Entity['verifiableCredential'],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function entityRowOf(e: Entity): Omit<EntityRow, 'seq'> {
  return {
    did: e.did,
    type: e.type,
    protocol_did: e.protocol ?? null,
    controller: e.controller,
    properties: JSON.stringify(e.properties),
    relationships: JSON.stringify(e.relationships),
    services: JSON.stringify(e.services),
    verifiable_credentials: JSON.stringify(e.verifiableCredential),
    created_at: e.createdAt,
    updated_at: e.updatedAt,
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

const entityByDid = (sql: Sql, did: string) => sql('twin_entities').where('did', did);

/** One entity row by DID. */
export async function findEntityRow(sql: Sql, did: string): Promise<EntityRow | undefined> {
  return entityByDid(sql, did).first();
}

/**
 * The row, which no other transaction may change until this one ends; a change in flight is
 * waited for and seen (a claim checks its household's controller against the latest one).
 */
export async function findEntityRowForShare(sql: Sql, did: string): Promise<EntityRow | undefined> {
  return entityByDid(sql, did).forShare().first();
}

export class EntityRepository {
  constructor(private readonly db: Db) {}

  async findByDid(did: string): Promise<Entity | undefined> {
    const row = await findEntityRow(this.db, did);
    return row && entityFromRow(row);
  }

  /** The entity, locked until the transaction ends (PostgreSQL; SQLite has one writer). */
  async findByDidForUpdate(did: string): Promise<Entity | undefined> {
    const row = await entityByDid(this.db, did).forUpdate().first();
    return row && entityFromRow(row);
  }

  async findManyByDid(dids: string[]): Promise<Entity[]> {
    if (!dids.length) return [];
    return (await this.db('twin_entities').whereIn('did', dids)).map(entityFromRow);
  }

  /** Inserts the entity and its relationship links (call inside a transaction: it takes the table's `seq` turn). */
  async insert(entity: Entity, links: Record<string, string>): Promise<void> {
    await takeSeqTurn(this.db, 'twin_entities');
    await this.db('twin_entities').insert(entityRowOf(entity));
    await this.replaceLinks(entity.did, links);
  }

  /** Stores the entity's new state (all but its type, protocol and creation); `links` replaces its relationship links. */
  async update(entity: Entity, links?: Record<string, string>): Promise<void> {
    const { controller, properties, relationships, services, verifiable_credentials, updated_at } = entityRowOf(entity);
    await this.db('twin_entities').update({ controller, properties, relationships, services, verifiable_credentials, updated_at }).where('did', entity.did);
    if (links) await this.replaceLinks(entity.did, links);
  }

  private async replaceLinks(did: string, links: Record<string, string>): Promise<void> {
    await this.db('twin_relationships').where('subject_did', did).delete();
    const rows = Object.entries(links).map(([role, object]) => ({ subject_did: did, role, object_did: object }));
    if (rows.length) await this.db('twin_relationships').insert(rows);
  }

  /** One page of entities with their `seq` (limit + 1 fetched so the caller knows whether more follow). */
  async list(f: EntityFilter): Promise<{ seq: number; entity: Entity }[]> {
    const q = this.db('twin_entities').select('twin_entities.*');
    if (f.type) q.where('type', f.type);
    if (f.protocol) q.where('protocol_did', f.protocol);
    if (f.controller) q.where('controller', f.controller);
    if (f.relatedTo) {
      const { relatedTo, role } = f;
      q.whereExists((sub) => {
        sub.select('role').from('twin_relationships').whereRaw('twin_relationships.subject_did = twin_entities.did').where('twin_relationships.object_did', relatedTo);
        if (role) sub.where('twin_relationships.role', role);
      });
    }
    if (f.afterSeq !== undefined) q.where('seq', '>', f.afterSeq);
    const rows = (await q.orderBy('seq', 'asc').limit(f.limit + 1)) as EntityRow[];
    return rows.map((r) => ({ seq: r.seq, entity: entityFromRow(r) }));
  }
}

/** One entity by DID, or undefined. */
export function findEntityByDid(db: Db, did: string): Promise<Entity | undefined> {
  return new EntityRepository(db).findByDid(did);
}
