// Twin entities and protocols: creation from a protocol (properties type-checked, relationships
// naming existing entities of the declared type), reads, lists and controller-only updates.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, type Sql } from '../../platform/db/sql.ts';
import { assertNoIssues, forbiddenAction, notFoundError, type InputIssue } from '../../platform/domain-errors.ts';
import type { Principal } from '../../platform/keys/service.ts';
import type {
  Entity,
  EntityCreateRequest,
  EntityPage,
  EntityUpdateRequest,
  ListEntitiesData,
  PropertyTypeName,
} from '../../../generated/openapi/types.gen.ts';
import { CreationIdempotency, type CreationAnswer } from '../idempotency.ts';
import { EntityRepository } from './entities.repository.ts';
import { decodeCursor, pageOf } from '../paging.ts';
import { assertMatchesSchema, didIssues } from '../schemas.ts';

export const PROTOCOL_TYPE = 'Protocol';
const PROPERTY_TYPES: PropertyTypeName[] = ['string', 'number', 'boolean', 'object', 'array'];
const TYPE_NAME_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/;

export function newEntityDid(): string {
  return `did:ixo:entity:${randomBytes(16).toString('hex')}`;
}

function typeOfValue(v: unknown): PropertyTypeName | 'null' | 'non-finite' {
  if (v === null) return 'null';
  // JSON has no Infinity, but 1e400 parses to it; storing it would silently turn it into null.
  if (typeof v === 'number' && !Number.isFinite(v)) return 'non-finite';
  if (Array.isArray(v)) return 'array';
  return typeof v as PropertyTypeName;
}

/** The query of GET /v1/entities, as the contract states it. */
export type EntityListFilter = NonNullable<ListEntitiesData['query']>;

type EntityShape = Pick<EntityCreateRequest, 'properties' | 'relationships' | 'services' | 'verifiableCredential' | 'controller'>;

export class EntityService {
  private readonly idempotency: CreationIdempotency;

  constructor(
    private readonly db: Db,
    now?: () => Date,
  ) {
    this.idempotency = new CreationIdempotency(db, now);
  }

  /** create, unless the caller's Idempotency-Key was sent before: then the first answer again. */
  async createOnce(principal: Principal, input: EntityCreateRequest, idempotencyKey: string | undefined): Promise<CreationAnswer> {
    return this.idempotency.run(
      idempotencyKey === undefined ? undefined : { principalDid: principal.did, operation: 'createEntity', key: idempotencyKey, body: input },
      (bind) =>
        inTransaction(this.db, async (trx) => {
          const entity = await this.checkNew(trx, principal, input);
          const created = { resourceId: entity.did, json: JSON.stringify(entity) };
          // The key binding commits with the entity, before its insert takes the seq turn.
          if (bind) await bind(trx, created);
          await this.insertNew(trx, entity);
          return created;
        }),
      async (did) => JSON.stringify(await this.get(did)),
    );
  }

  /** Creates an entity in a transaction of its own. */
  async create(principal: Principal, input: EntityCreateRequest): Promise<Entity> {
    return inTransaction(this.db, async (trx) => {
      const entity = await this.checkNew(trx, principal, input);
      await this.insertNew(trx, entity);
      return entity;
    });
  }

  /**
   * An entity's first step in the caller's transaction: the request checked (against its
   * protocol too) and the new entity, with its DID, not yet stored (`insertNew`). A caller
   * storing its own writes with the entity makes them between the two steps, before the insert
   * takes the table's seq turn (held to the commit). Throws DomainError (invalid).
   */
  async checkNew(trx: Sql, principal: Principal, input: EntityCreateRequest): Promise<Entity> {
    assertMatchesSchema<EntityCreateRequest>('EntityCreateRequest', input, 'entity');
    const isProtocol = input.type === PROTOCOL_TYPE;
    const errors: InputIssue[] = [];
    if (isProtocol && input.protocol) {
      errors.push({ path: ['protocol'], message: 'a Protocol is not created from another protocol', rule: 'protocol-of-protocol' });
    }
    errors.push(...serviceIdIssues(input.services));
    assertNoIssues(errors, 'The entity is invalid');

    const repo = new EntityRepository(trx);
    const protocol = input.protocol ? await this.loadProtocol(repo, input.protocol) : undefined;
    const fieldErrors = isProtocol ? this.checkProtocolShape(input) : await this.checkAgainstProtocol(repo, input, protocol);
    assertNoIssues(fieldErrors, 'The entity is invalid');
    const now = new Date().toISOString();
    return {
      did: newEntityDid(),
      type: input.type,
      ...(input.protocol ? { protocol: input.protocol } : {}),
      controller: input.controller ?? principal.did,
      properties: input.properties ?? {},
      relationships: input.relationships ?? {},
      services: input.services ?? [],
      verifiableCredential: input.verifiableCredential ?? [],
      createdAt: now,
      updatedAt: now,
    };
  }

  /** An entity's second step, in the transaction `checkNew` checked it in: stores it. */
  async insertNew(trx: Sql, entity: Entity): Promise<void> {
    // A protocol's relationships are role -> type, not links to entities.
    await new EntityRepository(trx).insert(entity, entity.type === PROTOCOL_TYPE ? {} : entity.relationships);
  }

  async get(did: string): Promise<Entity | undefined> {
    return new EntityRepository(this.db).findByDid(did);
  }

  async list(filter: EntityListFilter): Promise<EntityPage> {
    const limit = filter.limit ?? 50;
    const rows = await new EntityRepository(this.db).list({ ...filter, afterSeq: decodeCursor(filter.cursor), limit });
    return pageOf(rows, limit, (r) => r.entity);
  }

  /** Replaces the given top-level fields; only the entity's controller may. */
  async update(principal: Principal, did: string, patch: EntityUpdateRequest): Promise<Entity> {
    assertMatchesSchema<EntityUpdateRequest>('EntityUpdateRequest', patch, 'entity update');
    return inTransaction(this.db, async (trx) => {
      const repo = new EntityRepository(trx);
      // Locked: a concurrent PATCH (say, a controller transfer) must not be overwritten by this one.
      const current = await repo.findByDidForUpdate(did);
      if (!current) throw notFoundError(`No entity ${did}.`);
      if (current.controller !== principal.did) {
        throw forbiddenAction(`Only the controller of ${did} (${current.controller}) may update it.`);
      }
      const merged: EntityCreateRequest = {
        type: current.type,
        ...(current.protocol ? { protocol: current.protocol } : {}),
        controller: patch.controller ?? current.controller,
        properties: patch.properties ?? current.properties,
        relationships: patch.relationships ?? current.relationships,
        services: patch.services ?? current.services,
        verifiableCredential: patch.verifiableCredential ?? current.verifiableCredential,
      };
      const isProtocol = current.type === PROTOCOL_TYPE;
      const protocol = current.protocol ? await repo.findByDid(current.protocol) : undefined;
      // Only what the patch sends is checked against the protocol: a protocol edited since must
      // not lock its entities out of, say, a controller transfer.
      const sent = { ...merged, properties: patch.properties ?? {}, relationships: patch.relationships ?? {} };
      const errors = isProtocol ? this.checkProtocolShape(merged) : await this.checkAgainstProtocol(repo, sent, protocol, did);
      errors.push(...serviceIdIssues(patch.services));
      assertNoIssues(errors, 'The update is invalid');
      const updated: Entity = {
        ...current,
        controller: merged.controller!,
        properties: merged.properties!,
        relationships: merged.relationships!,
        services: merged.services!,
        verifiableCredential: merged.verifiableCredential!,
        updatedAt: new Date().toISOString(),
      };
      await repo.update(updated, isProtocol || !patch.relationships ? undefined : updated.relationships);
      return updated;
    });
  }

  private async loadProtocol(repo: EntityRepository, did: string): Promise<Entity> {
    const row = await repo.findByDid(did);
    const problem = !row ? 'names no existing entity' : row.type !== PROTOCOL_TYPE ? `names an entity of type ${row.type}, not a Protocol` : undefined;
    assertNoIssues(problem ? [{ path: ['protocol'], message: problem, rule: 'protocol-exists' }] : [], 'The entity is invalid');
    return row!;
  }

  /** A protocol declares property name -> type name and role -> entity type. */
  private checkProtocolShape(input: EntityShape): InputIssue[] {
    const errors: InputIssue[] = [];
    for (const [name, t] of Object.entries(input.properties ?? {})) {
      if (typeof t !== 'string' || !PROPERTY_TYPES.includes(t as PropertyTypeName)) {
        errors.push({ path: ['properties', name], message: `must be one of ${PROPERTY_TYPES.join(', ')}`, rule: 'protocol-property-type' });
      }
    }
    for (const [role, t] of Object.entries(input.relationships ?? {})) {
      if (!TYPE_NAME_RE.test(t)) {
        errors.push({ path: ['relationships', role], message: 'must be an entity type name, e.g. OracleEntity', rule: 'protocol-relationship-type' });
      }
    }
    return errors;
  }

  /** Properties declared and typed by the protocol; relationships naming existing entities of the declared type. */
  private async checkAgainstProtocol(repo: EntityRepository, input: EntityShape, protocol: Entity | undefined, selfDid?: string): Promise<InputIssue[]> {
    const errors: InputIssue[] = [];
    // A protocol's properties are name -> type name (checkProtocolShape), its relationships role -> type.
    // Maps, not objects: a name such as `valueOf` or `__proto__` is declared only if the protocol declares it.
    const declaredProps = new Map(Object.entries((protocol?.properties ?? {}) as Record<string, string>));
    const declaredRoles = new Map(Object.entries(protocol?.relationships ?? {}));
    if (protocol) {
      for (const [name, value] of Object.entries(input.properties ?? {})) {
        const declared = declaredProps.get(name);
        if (!declared) {
          errors.push({ path: ['properties', name], message: `is not a property of protocol ${protocol.did}`, rule: 'property-declared' });
        } else if (typeOfValue(value) !== declared) {
          errors.push({ path: ['properties', name], message: `must be of type ${declared} (protocol ${protocol.did})`, rule: 'property-type' });
        }
      }
    }
    const links = Object.entries(input.relationships ?? {});
    errors.push(...didIssues(links.map(([role, target]) => [['relationships', role], target])));
    const targets = new Map((await repo.findManyByDid(links.map(([, t]) => t))).map((r) => [r.did, r]));
    for (const [role, targetDid] of links) {
      const path = ['relationships', role];
      if (errors.some((e) => e.path[0] === 'relationships' && e.path[1] === role)) continue;
      if (protocol && !declaredRoles.has(role)) {
        errors.push({ path, message: `is not a relationship of protocol ${protocol.did}`, rule: 'relationship-declared' });
        continue;
      }
      const target = targets.get(targetDid);
      if (!target || targetDid === selfDid) {
        errors.push({ path, message: `${targetDid} is not an existing entity`, rule: 'relationship-target-exists' });
      } else if (protocol && target.type !== declaredRoles.get(role)) {
        errors.push({ path, message: `${targetDid} is a ${target.type}, the protocol requires a ${declaredRoles.get(role)}`, rule: 'relationship-target-type' });
      }
    }
    return errors;
  }
}

/** DID Core 1.0 §5.4: the services of a DID document have distinct ids. */
function serviceIdIssues(services: readonly { id: string }[] | undefined): InputIssue[] {
  const seen = new Set<string>();
  return (services ?? []).flatMap(({ id }, i) => {
    if (!seen.has(id)) {
      seen.add(id);
      return [];
    }
    return [{ path: ['services', i, 'id'], message: `repeats the id ${id}: the services of a DID document have distinct ids (DID Core 1.0 §5.4)`, rule: 'service-id-unique' }];
  });
}
