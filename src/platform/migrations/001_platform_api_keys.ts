import { notNull, type MigrationDb } from './index.ts';

export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'varchar(32)', (c) => c.notNull().primaryKey())
    .addColumn('name', 'varchar(200)', notNull)
    // SHA-256 of the whole key: keys are 256-bit random, so a fast hash is enough and the
    // plain key is never stored.
    .addColumn('key_hash', 'varchar(64)', notNull)
    .addColumn('prefix', 'varchar(16)', notNull)
    .addColumn('principal_did', 'varchar(512)', notNull)
    .addColumn('scopes', 'text', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addColumn('revoked_at', 'varchar(32)')
    .addUniqueConstraint('api_keys_key_hash_unique', ['key_hash'])
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('api_keys').execute();
}
