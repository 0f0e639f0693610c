import type { Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { ApiKeys } from '../../../generated/db/database.ts';

export type ApiKeyRow = Selectable<ApiKeys>;

export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async insert(row: ApiKeyRow): Promise<void> {
    await this.db.insertInto('api_keys').values(row).execute();
  }

  async findActiveByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).where('revoked_at', 'is', null).executeTakeFirst();
  }

  async list(): Promise<ApiKeyRow[]> {
    return this.db.selectFrom('api_keys').selectAll().orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
  }

  /** Returns false when no active key has this id. */
  async revoke(id: string, at: string): Promise<boolean> {
    const { numUpdatedRows } = await this.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return numUpdatedRows > 0n;
  }
}
