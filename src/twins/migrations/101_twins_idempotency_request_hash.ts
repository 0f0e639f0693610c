import type { MigrationDb } from './index.ts';

// What request an Idempotency-Key was first sent with (SHA-256 of the canonical claim), so a
// retry is recognised by its whole body: the claim's measurement key alone misses other fields,
// and changes when a rejected claim is corrected. Keys bound before this migration have none.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('kpt_idempotency_keys').addColumn('request_hash', 'varchar(64)').execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('kpt_idempotency_keys').dropColumn('request_hash').execute();
}
