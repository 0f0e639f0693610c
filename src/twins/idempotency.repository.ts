// The only SQL for the Idempotency-Keys of entity, collection and draw creation (idempotency.ts).
import type { Sql } from '../platform/db/sql.ts';

export interface KeyScope {
  principalDid: string;
  operation: string;
  key: string;
}

/** A key's binding: the request it came with, the resource it created and what it was answered (null for keys bound before answers were kept). */
export interface KeyBinding {
  request_hash: string;
  resource_id: string;
  response_status: number | null;
  response_body: string | null;
}

export class IdempotencyKeyRepository {
  constructor(private readonly sql: Sql) {}

  /** The binding of a key made after `since` (ISO time), if any. */
  async find(scope: KeyScope, since: string): Promise<KeyBinding | undefined> {
    return this.keyed(scope).first('request_hash', 'resource_id', 'response_status', 'response_body').where('created_at', '>', since);
  }

  private keyed(scope: KeyScope) {
    return this.sql('twins_idempotency_keys').where({ principal_did: scope.principalDid, operation: scope.operation, idempotency_key: scope.key });
  }

  /** Binds the key, first dropping a binding of it made at or before `expiredBy`. */
  async bind(
    scope: KeyScope,
    binding: { requestHash: string; resourceId: string; responseStatus: number; responseBody: string; at: string },
    expiredBy: string,
  ): Promise<void> {
    await this.keyed(scope).where('created_at', '<=', expiredBy).delete();
    await this.sql('twins_idempotency_keys').insert({
      principal_did: scope.principalDid,
      operation: scope.operation,
      idempotency_key: scope.key,
      request_hash: binding.requestHash,
      resource_id: binding.resourceId,
      response_status: binding.responseStatus,
      response_body: binding.responseBody,
      created_at: binding.at,
    });
  }
}
