import { notNull, withIncrements, type MigrationDb } from './index.ts';

// Bitstring Status List v1.0 for KPT credentials (src/twins/credential-status.ts): each claim
// signed with a credential gets a status index; the state of an index is a row only once it was
// revoked or suspended, and every change is an audit row naming who made it and why.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('kpt_claims').addColumn('status_list_index', 'integer').execute();
  await db.schema.createIndex('kpt_claims_status_list_index_unique').unique().on('kpt_claims').column('status_list_index').execute();
  // Instances reserve blocks of indexes here, so no two credentials share one.
  await db.schema
    .createTable('twin_status_index_counter')
    .addColumn('name', 'varchar(32)', (c) => c.notNull().primaryKey())
    .addColumn('next_index', 'bigint', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .execute();
  await db.insertInto('twin_status_index_counter').values({ name: 'credentials', next_index: 0, created_at: new Date().toISOString() }).execute();
  await createStatusTable(db);
  await withIncrements(db, db.schema.createTable('twin_credential_status_events'), 'id')
    .addColumn('claim_id', 'varchar(64)', notNull)
    .addColumn('status_list_index', 'integer', notNull)
    .addColumn('action', 'varchar(16)', notNull)
    .addColumn('reason', 'text', notNull)
    .addColumn('actor_did', 'varchar(512)', notNull)
    .addColumn('api_key_id', 'varchar(64)')
    .addColumn('created_at', 'varchar(32)', notNull)
    .execute();
  await db.schema.createIndex('twin_credential_status_events_claim_id_index').on('twin_credential_status_events').column('claim_id').execute();
}

/** The state of each index whose status changed (until migration 405 moved it onto the claims, and after its down migration). */
export async function createStatusTable(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('twin_credential_statuses')
    .addColumn('status_list_index', 'integer', (c) => c.notNull().primaryKey())
    .addColumn('claim_id', 'varchar(64)', notNull)
    .addColumn('revoked', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('suspended', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('updated_at', 'varchar(32)', notNull)
    .addUniqueConstraint('twin_credential_statuses_claim_id_unique', ['claim_id'])
    .addForeignKeyConstraint('twin_credential_statuses_claim_id_foreign', ['claim_id'], 'kpt_claims', ['id'])
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  for (const table of ['twin_credential_status_events', 'twin_credential_statuses', 'twin_status_index_counter']) await db.schema.dropTable(table).execute();
  await db.schema.dropIndex('kpt_claims_status_list_index_unique').execute();
  await db.schema.alterTable('kpt_claims').dropColumn('status_list_index').execute();
}
