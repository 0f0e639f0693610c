// Idempotency-Key on area A's creating POSTs other than claims (whose keys live with the claim,
// claims.service.ts): a retry with the same key and body is answered what the first request was
// answered (its status and body, kept with the key in the creating transaction), marked as a
// replay; the key sent with another body is refused with 422, as the IETF Idempotency-Key draft
// says. A key is scoped to its caller and operation and kept 24 hours.
import { createHash } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import type { Sql } from '../platform/db/sql.ts';
import { DomainError } from '../platform/domain-errors.ts';
import { jcs } from './credentials/credentials.ts';
import { IdempotencyKeyRepository, type KeyBinding } from './idempotency.repository.ts';

export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

export interface IdempotentRequest {
  principalDid: string;
  operation: 'createEntity' | 'createCollection' | 'createDraw' | 'createWebhook';
  key: string;
  /** The request body; its canonical form (RFC 8785) is what "the same body" means. */
  body: unknown;
}

const WHAT: Record<IdempotentRequest['operation'], string> = { createEntity: 'entity', createCollection: 'collection', createDraw: 'draw', createWebhook: 'webhook' };

/** The status of a creation's answer (and of its replays). */
export const CREATED_STATUS = 201;

/** A creating request's answer: what it created, or, for a retry with its Idempotency-Key, what the first request was answered. */
export interface CreationAnswer {
  status: number;
  /** The body as JSON text: a replay's is the first answer's, byte for byte. */
  json: string;
  /** The id of the resource created (its Location). */
  resourceId: string;
  /** true for a retry answered with the first request's answer. */
  replayed: boolean;
}

/** What `create` made: the new resource's id and its answer's body. */
export interface NewResource {
  resourceId: string;
  json: string;
}

/** Shared by claims, whose reused key is refused the same way. */
export function idempotencyKeyReused(key: string, what: string): DomainError {
  return new DomainError('unprocessable', `Idempotency-Key ${key} was already used for a different ${what}.`, {
    issues: [{ path: ['Idempotency-Key'], message: 'was already used with a different request body', rule: 'idempotency-key-reuse' }],
    type: 'idempotency-key-reuse',
  });
}

/** What "the same body" means for every Idempotency-Key of area A: the SHA-256 of its canonical form (RFC 8785). */
export const requestHash = (body: unknown): string => createHash('sha256').update(jcs(body)).digest('hex');

export class CreationIdempotency {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Runs `create` (which must call `bind` in its transaction with the new resource's id and
   * answer) unless the key is bound already: then the answer kept with it is replayed. When
   * `create` fails, a first request with the same key that committed meanwhile (a concurrent
   * retry) decides the answer. `load` reads a resource as JSON, for keys bound before answers
   * were kept.
   */
  async run(
    request: IdempotentRequest | undefined,
    create: (bind?: (sql: Sql, created: NewResource) => Promise<void>) => Promise<NewResource>,
    load: (resourceId: string) => Promise<string>,
  ): Promise<CreationAnswer> {
    const creation = async (bind?: (sql: Sql, created: NewResource) => Promise<void>): Promise<CreationAnswer> => ({ status: CREATED_STATUS, ...(await create(bind)), replayed: false });
    if (!request) return creation();
    const hash = requestHash(request.body);
    const bound = await this.binding(request, hash);
    if (bound) return this.replay(bound, load);
    try {
      return await creation((sql, created) => this.bind(sql, request, hash, created));
    } catch (err) {
      const meanwhile = await this.binding(request, hash);
      if (meanwhile) return this.replay(meanwhile, load);
      throw err;
    }
  }

  /** A bound key's answer again; a key bound before answers were kept answers its resource as it is now, as created (only creations bound those). */
  private async replay(bound: KeyBinding, load: (resourceId: string) => Promise<string>): Promise<CreationAnswer> {
    return {
      status: bound.response_status ?? CREATED_STATUS,
      json: bound.response_body ?? (await load(bound.resource_id)),
      resourceId: bound.resource_id,
      replayed: true,
    };
  }

  private cutoff(): string {
    return new Date(this.now().getTime() - IDEMPOTENCY_KEY_TTL_MS).toISOString();
  }

  /** A live key's binding for this body; 422 when the key came with another body. */
  private async binding(request: IdempotentRequest, hash: string): Promise<KeyBinding | undefined> {
    const row = await new IdempotencyKeyRepository(this.db).find(request, this.cutoff());
    if (row && row.request_hash !== hash) throw idempotencyKeyReused(request.key, WHAT[request.operation]);
    return row;
  }

  /** In the creating transaction, with the answer: an expired binding of the key gives way to the new one. */
  private async bind(sql: Sql, request: IdempotentRequest, hash: string, created: NewResource): Promise<void> {
    await new IdempotencyKeyRepository(sql).bind(
      request,
      { requestHash: hash, resourceId: created.resourceId, responseStatus: CREATED_STATUS, responseBody: created.json, at: this.now().toISOString() },
      this.cutoff(),
    );
  }
}
