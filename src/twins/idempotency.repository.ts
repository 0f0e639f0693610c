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
    return this.sql.one(
      `select request_hash, resource_id from twins_idempotency_keys
       where principal_did = ? and operation = ? and idempotency_key = ? and created_at > ?`,
      [scope.principalDid, scope.operation, scope.key, since],
    );
  }

  /** Binds the key, first dropping a binding of it made at or before `expiredBy`. */
  async bind(scope: KeyScope, binding: { requestHash: string; resourceId: string; at: string }, expiredBy: string): Promise<void> {
    const key = [scope.principalDid, scope.operation, scope.key];
    await this.sql.run('delete from twins_idempotency_keys where principal_did = ? and operation = ? and idempotency_key = ? and created_at <= ?', [...key, expiredBy]);
    await this.sql.run(
      'insert into twins_idempotency_keys (principal_did, operation, idempotency_key, request_hash, resource_id, created_at) values (?, ?, ?, ?, ?, ?)',
      [...key, binding.requestHash, binding.resourceId, binding.at],
    );
  }
}
