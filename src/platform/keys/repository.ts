import type { Db } from '../db/index.ts';
import type { ApiKeys } from '../../../generated/db/tables.ts';

export type ApiKeyRow = ApiKeys;

export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async insert(row: ApiKeyRow): Promise<void> {
    await this.db('api_keys').insert(row);
  }

  async findActiveByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.db('api_keys').where('key_hash', hash).whereNull('revoked_at').first();
  }

  async list(): Promise<ApiKeyRow[]> {
    return this.db('api_keys').orderBy('created_at', 'asc').orderBy('id', 'asc');
  }

  /** Returns false when no active key has this id. */
  async revoke(id: string, at: string): Promise<boolean> {
    return (await this.db('api_keys').where('id', id).whereNull('revoked_at').update({ revoked_at: at })) > 0;
  }
}
