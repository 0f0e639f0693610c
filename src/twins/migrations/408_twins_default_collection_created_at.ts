import type { Knex } from 'knex';
import { migrationRanAt, SEEDED_EPOCH } from '../../platform/db/dialect.ts';
import { DEFAULT_COLLECTION_ID } from '../claims/collections.ts';

// The 'default' collection was seeded by 100 with the epoch as its creation time, and reported
// 1970-01-01: it gets the time 100 ran.
export async function up(knex: Knex): Promise<void> {
  const createdAt = await migrationRanAt(knex, '100_twins_schema');
  await knex('kpt_collections').update({ created_at: createdAt }).where({ id: DEFAULT_COLLECTION_ID, created_at: SEEDED_EPOCH });
}

export async function down(knex: Knex): Promise<void> {
  await knex('kpt_collections').update({ created_at: SEEDED_EPOCH }).where({ id: DEFAULT_COLLECTION_ID });
}
