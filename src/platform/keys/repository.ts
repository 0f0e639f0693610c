import type { Db } from '../db/index.ts';

export interface ApiKeyRow {
  id: string;
  name: string;
  key_hash: string;
  prefix: string;
  principal_did: string;
  scopes: string;
  created_at: string;
  revoked_at: string | null;
}

export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async insert(row: ApiKeyRow): Promise<void> {
    await this.db('api_keys').insert(row);
  }

  async findActiveByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.db<ApiKeyRow>('api_keys').where({ key_hash: hash }).whereNull('revoked_at').first();
  }

  async list(): Promise<ApiKeyRow[]> {
    return this.db<ApiKeyRow>('api_keys').orderBy('created_at', 'asc').orderBy('id', 'asc');
  }

  /** Returns false when no active key has this id. */
  async revoke(id: string, at: string): Promise<boolean> {
    const n = await this.db('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: at });
    return n > 0;
  }
}
