import { notNull, type MigrationDb } from './index.ts';

// Idempotency-Keys of the creating POSTs other than claims (entities, collections): scoped to
// the caller and the operation, naming the resource the first request created and the hash of
// that request's body, so a retry is answered with it and another body with the key refused.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('twins_idempotency_keys')
    .addColumn('principal_did', 'varchar(512)', notNull)
    .addColumn('operation', 'varchar(64)', notNull)
    .addColumn('idempotency_key', 'varchar(200)', notNull)
    .addColumn('request_hash', 'varchar(64)', notNull)
    .addColumn('resource_id', 'varchar(512)', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addPrimaryKeyConstraint('twins_idempotency_keys_pkey', ['principal_did', 'operation', 'idempotency_key'])
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('twins_idempotency_keys').execute();
}
