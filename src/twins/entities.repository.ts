// The only SQL for twin entities and their relationship links (but area A's read port, read-port.ts).
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../platform/db/index.ts';
import { prepared } from '../platform/db/prepared.ts';
import { lockRows, takeSeqTurn, type Sql } from '../platform/db/sql.ts';
import type { Entity } from '../../generated/openapi/types.gen.ts';
import type { TwinEntities } from '../../generated/db/database.ts';

export type EntityRow = Selectable<TwinEntities>;
type NewEntityRow = Insertable<TwinEntities>;

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

function entityRowOf(e: Entity): Required<Omit<NewEntityRow, 'seq'>> {
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

const entityByDid = (sql: Sql, did: string) => sql.selectFrom('twin_entities').selectAll().where('did', '=', did);

/** One entity row by DID. */
export async function findEntityRow(sql: Sql, did: string): Promise<EntityRow | undefined> {
  return (await entity(sql, did)).rows[0];
}

/**
 * The row, which no other transaction may change until this one ends; a change in flight is
 * waited for and seen (a claim checks its household's controller against the latest one).
 */
export async function findEntityRowForShare(sql: Sql, did: string): Promise<EntityRow | undefined> {
  return (await entityForShare(sql, did)).rows[0];
}

// Prepared (platform/db/prepared.ts): every claim submission reads its household so, and the
// chain gateway reads entities one by one.
const entity = prepared((db: Db, did: string) => entityByDid(db, did), { planOnce: true, sharesRoundTrip: true });
const entityForShare = prepared((db: Db, did: string) => entityByDid(db, did).$call(lockRows(db, 'share')), { planOnce: true });

export class EntityRepository {
  constructor(private readonly db: Db) {}

  async findByDid(did: string): Promise<Entity | undefined> {
    const row = await findEntityRow(this.db, did);
    return row && entityFromRow(row);
  }

  /** The entity, locked until the transaction ends (see lockRows). */
  async findByDidForUpdate(did: string): Promise<Entity | undefined> {
    const row = await entityByDid(this.db, did).$call(lockRows(this.db, 'update')).executeTakeFirst();
    return row && entityFromRow(row);
  }

  async findManyByDid(dids: string[]): Promise<Entity[]> {
    if (!dids.length) return [];
    return (await this.db.selectFrom('twin_entities').selectAll().where('did', 'in', dids).execute()).map(entityFromRow);
  }

  /** Inserts the entity and its relationship links (call inside a transaction: it takes the table's `seq` turn). */
  async insert(entity: Entity, links: Record<string, string>): Promise<void> {
    await takeSeqTurn(this.db, 'twin_entities');
    await this.db.insertInto('twin_entities').values(entityRowOf(entity)).execute();
    await this.replaceLinks(entity.did, links);
  }

  /** Stores the entity's new state (all but its type, protocol and creation); `links` replaces its relationship links. */
  async update(entity: Entity, links?: Record<string, string>): Promise<void> {
    const { controller, properties, relationships, services, verifiable_credentials, updated_at } = entityRowOf(entity);
    await this.db
      .updateTable('twin_entities')
      .set({ controller, properties, relationships, services, verifiable_credentials, updated_at })
      .where('did', '=', entity.did)
      .execute();
    if (links) await this.replaceLinks(entity.did, links);
  }

  private async replaceLinks(did: string, links: Record<string, string>): Promise<void> {
    await this.db.deleteFrom('twin_relationships').where('subject_did', '=', did).execute();
    const rows = Object.entries(links).map(([role, object]) => ({ subject_did: did, role, object_did: object }));
    if (rows.length) await this.db.insertInto('twin_relationships').values(rows).execute();
  }

  /** One page of entities with their `seq` (limit + 1 fetched so the caller knows whether more follow). */
  async list(f: EntityFilter): Promise<{ seq: number; entity: Entity }[]> {
    const rows = await this.db
      .selectFrom('twin_entities')
      .selectAll('twin_entities')
      .$if(!!f.type, (q) => q.where('type', '=', f.type!))
      .$if(!!f.protocol, (q) => q.where('protocol_did', '=', f.protocol!))
      .$if(!!f.controller, (q) => q.where('controller', '=', f.controller!))
      .$if(!!f.relatedTo, (q) =>
        q.where((eb) =>
          eb.exists(
            eb
              .selectFrom('twin_relationships')
              .select('twin_relationships.role')
              .whereRef('twin_relationships.subject_did', '=', 'twin_entities.did')
              .where('twin_relationships.object_did', '=', f.relatedTo!)
              .$if(!!f.role, (sub) => sub.where('twin_relationships.role', '=', f.role!)),
          ),
        ),
      )
      .$if(f.afterSeq !== undefined, (q) => q.where('seq', '>', f.afterSeq!))
      .orderBy('seq', 'asc')
      .limit(f.limit + 1)
      .execute();
    return rows.map((r) => ({ seq: r.seq, entity: entityFromRow(r) }));
  }
}

/** One entity by DID, or undefined. */
export function findEntityByDid(db: Db, did: string): Promise<Entity | undefined> {
  return new EntityRepository(db).findByDid(did);
}
