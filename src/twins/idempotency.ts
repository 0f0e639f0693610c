// Idempotency-Key on area A's creating POSTs other than claims (whose keys live with the claim,
// claims.service.ts): a retry with the same key and body is answered with the resource the
// first request created; the key sent with another body is refused with 422, as the IETF
// Idempotency-Key draft says. A key is scoped to its caller and operation and kept 24 hours.
import { createHash } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import type { Sql } from '../platform/db/sql.ts';
import { DomainError } from '../platform/domain-errors.ts';
import { jcs } from './credentials/credentials.ts';
import { IdempotencyKeyRepository } from './idempotency.repository.ts';

export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

export interface IdempotentRequest {
  principalDid: string;
  operation: 'createEntity' | 'createCollection';
  key: string;
  /** The request body; its canonical form (RFC 8785) is what "the same body" means. */
  body: unknown;
}

export interface Created<T> {
  /** false when the key named a resource already: `resource` is that one. */
  created: boolean;
  resource: T;
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
   * Runs `create` (which must call `bind` in its transaction with the new resource's id) unless
   * the key already names a resource, which `load` then reads. When `create` fails, a first
   * request with the same key that committed meanwhile (a concurrent retry) decides the answer.
   */
  async run<T>(
    request: IdempotentRequest | undefined,
    create: (bind?: (sql: Sql, resourceId: string) => Promise<void>) => Promise<T>,
    load: (resourceId: string) => Promise<T>,
  ): Promise<Created<T>> {
    if (!request) return { created: true, resource: await create() };
    const hash = requestHash(request.body);
    const bound = await this.boundResource(request, hash);
    if (bound) return { created: false, resource: await load(bound) };
    try {
      return { created: true, resource: await create((sql, id) => this.bind(sql, request, hash, id)) };
    } catch (err) {
      const meanwhile = await this.boundResource(request, hash);
      if (meanwhile) return { created: false, resource: await load(meanwhile) };
      throw err;
    }
  }

  private cutoff(): string {
    return new Date(this.now().getTime() - IDEMPOTENCY_KEY_TTL_MS).toISOString();
  }

  /** The resource a live key names for this body; 422 when the key came with another body. */
  private async boundResource(request: IdempotentRequest, hash: string): Promise<string | undefined> {
    const row = await new IdempotencyKeyRepository(this.db).find(request, this.cutoff());
    if (row && row.request_hash !== hash) throw idempotencyKeyReused(request.key, request.operation === 'createEntity' ? 'entity' : 'collection');
    return row?.resource_id;
  }

  /** In the creating transaction: an expired binding of the key gives way to the new one. */
  private async bind(sql: Sql, request: IdempotentRequest, hash: string, resourceId: string): Promise<void> {
    await new IdempotencyKeyRepository(sql).bind(request, { requestHash: hash, resourceId, at: this.now().toISOString() }, this.cutoff());
  }
}
