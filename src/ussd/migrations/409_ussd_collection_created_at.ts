import type { Knex } from 'knex';
import { migrationRanAt, SEEDED_EPOCH } from '../../platform/db/dialect.ts';
import { USSD_DEFAULT_COLLECTION_ID } from '../collections.ts';

// The 'ussd' collection was seeded by 203 with the epoch as its creation time, and reported
// 1970-01-01: it gets the time 203 ran.
export async function up(knex: Knex): Promise<void> {
  const createdAt = await migrationRanAt(knex, '203_ussd_default_collection');
  await knex('kpt_collections').update({ created_at: createdAt }).where({ id: USSD_DEFAULT_COLLECTION_ID, created_at: SEEDED_EPOCH });
}

export async function down(knex: Knex): Promise<void> {
  await knex('kpt_collections').update({ created_at: SEEDED_EPOCH }).where({ id: USSD_DEFAULT_COLLECTION_ID });
}
