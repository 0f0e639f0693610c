// The only SQL for the Idempotency-Keys of entity and collection creation (idempotency.ts).
import type { Sql } from '../platform/db/sql.ts';

export interface KeyScope {
  principalDid: string;
  operation: string;
  key: string;
}

export class IdempotencyKeyRepository {
  constructor(private readonly sql: Sql) {}

  /** The binding of a key made after `since` (ISO time), if any. */
  async find(scope: KeyScope, since: string): Promise<{ request_hash: string; resource_id: string } | undefined> {
    return this.keyed(scope).select(['request_hash', 'resource_id']).where('created_at', '>', since).executeTakeFirst();
  }

  private keyed(scope: KeyScope) {
    return this.sql.selectFrom('twins_idempotency_keys').where('principal_did', '=', scope.principalDid).where('operation', '=', scope.operation).where('idempotency_key', '=', scope.key);
  }

  /** Binds the key, first dropping a binding of it made at or before `expiredBy`. */
  async bind(scope: KeyScope, binding: { requestHash: string; resourceId: string; at: string }, expiredBy: string): Promise<void> {
    const key = { principal_did: scope.principalDid, operation: scope.operation, idempotency_key: scope.key };
    await this.sql
      .deleteFrom('twins_idempotency_keys')
      .where('principal_did', '=', key.principal_did)
      .where('operation', '=', key.operation)
      .where('idempotency_key', '=', key.idempotency_key)
      .where('created_at', '<=', expiredBy)
      .execute();
    await this.sql
      .insertInto('twins_idempotency_keys')
      .values({ ...key, request_hash: binding.requestHash, resource_id: binding.resourceId, created_at: binding.at })
      .execute();
  }
}
