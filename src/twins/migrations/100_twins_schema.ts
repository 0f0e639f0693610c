// Area A storage: twin entities (protocols are entities of type Protocol), their typed
// relationship links, KPT claim collections and claims, content-addressed evidence blobs and the
// validator keys that sign credentials. JSON documents are stored as text so the same code runs
// on SQLite and PostgreSQL.
import { doubleType, notNull, withIncrements, type MigrationDb } from './index.ts';

export const DEFAULT_COLLECTION_ID = 'default';
/** The creator of the collections the migrations make (`default`, `ussd`): no partner's principal. */
export const SYSTEM_DID = 'did:ixo:entity:00000000000000000000000000000000';

export async function up(db: MigrationDb): Promise<void> {
  // seq gives a stable insertion order for offset paging; the DID is the public key.
  await withIncrements(db, db.schema.createTable('twin_entities'), 'seq')
    .addColumn('did', 'varchar(512)', notNull)
    .addColumn('type', 'varchar(128)', notNull)
    .addColumn('protocol_did', 'varchar(512)')
    .addColumn('controller', 'varchar(512)', notNull)
    .addColumn('properties', 'text', notNull)
    .addColumn('relationships', 'text', notNull)
    .addColumn('services', 'text', notNull)
    .addColumn('verifiable_credentials', 'text', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addColumn('updated_at', 'varchar(32)', notNull)
    .addUniqueConstraint('twin_entities_did_unique', ['did'])
    .execute();
  for (const column of ['type', 'protocol_did', 'controller']) {
    await db.schema.createIndex(`twin_entities_${column}_index`).on('twin_entities').column(column).execute();
  }

  // One row per (subject, role, object): the relationship chain (organisation implements
  // project, project generates asset, ...) as links a query can follow in both directions.
  await db.schema
    .createTable('twin_relationships')
    .addColumn('subject_did', 'varchar(512)', notNull)
    .addColumn('role', 'varchar(128)', notNull)
    .addColumn('object_did', 'varchar(512)', notNull)
    .addPrimaryKeyConstraint('twin_relationships_pkey', ['subject_did', 'role', 'object_did'])
    .execute();
  await db.schema.createIndex('twin_relationships_object_did_index').on('twin_relationships').column('object_did').execute();

  await withIncrements(db, db.schema.createTable('kpt_collections'), 'seq')
    .addColumn('id', 'varchar(64)', notNull)
    .addColumn('name', 'varchar(200)', notNull)
    .addColumn('description', 'text')
    // How households were randomly selected (KPT rule 5 can be met here for the whole campaign).
    .addColumn('selection_method', 'text')
    .addColumn('created_by', 'varchar(512)', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addUniqueConstraint('kpt_collections_id_unique', ['id'])
    .execute();

  await withIncrements(db, db.schema.createTable('kpt_claims'), 'seq')
    .addColumn('id', 'varchar(64)', notNull)
    // sha-256 of (collection, household, period, logs): identical submissions collide here, so
    // concurrent duplicates store one claim whatever the database.
    .addColumn('claim_key', 'varchar(64)', notNull)
    .addColumn('collection_id', 'varchar(64)', notNull)
    .addColumn('household_did', 'varchar(512)', notNull)
    .addColumn('test_group', 'varchar(16)', notNull)
    .addColumn('status', 'varchar(16)', notNull)
    .addColumn('start_date', 'varchar(10)')
    .addColumn('end_date', 'varchar(10)')
    .addColumn('days', 'integer', notNull)
    .addColumn('total_kg', doubleType(db), notNull)
    .addColumn('daily_logs', 'text', notNull)
    .addColumn('body', 'text', notNull)
    .addColumn('claim_cid', 'varchar(128)', notNull)
    .addColumn('checks', 'text', notNull)
    .addColumn('reasons', 'text', notNull)
    .addColumn('credential', 'text')
    .addColumn('verifiable_credential', 'text')
    .addColumn('submitted_by', 'varchar(512)', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addColumn('updated_at', 'varchar(32)', notNull)
    .addColumn('verified_at', 'varchar(32)')
    .addUniqueConstraint('kpt_claims_id_unique', ['id'])
    .addUniqueConstraint('kpt_claims_claim_key_unique', ['claim_key'])
    .addForeignKeyConstraint('kpt_claims_collection_id_foreign', ['collection_id'], 'kpt_collections', ['id'])
    .execute();
  await db.schema.createIndex('kpt_claims_collection_id_test_group_status_index').on('kpt_claims').columns(['collection_id', 'test_group', 'status']).execute();
  await db.schema.createIndex('kpt_claims_household_did_index').on('kpt_claims').column('household_did').execute();

  // An Idempotency-Key is scoped to the caller that sent it and names the claim its first request
  // answered with, whether that request created the claim or found it already stored.
  await db.schema
    .createTable('kpt_idempotency_keys')
    .addColumn('principal_did', 'varchar(512)', notNull)
    .addColumn('idempotency_key', 'varchar(200)', notNull)
    .addColumn('claim_id', 'varchar(64)', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addPrimaryKeyConstraint('kpt_idempotency_keys_pkey', ['principal_did', 'idempotency_key'])
    .addForeignKeyConstraint('kpt_idempotency_keys_claim_id_foreign', ['claim_id'], 'kpt_claims', ['id'])
    .execute();

  await db.schema
    .createTable('twin_evidence_blobs')
    .addColumn('cid', 'varchar(128)', (c) => c.notNull().primaryKey())
    .addColumn('media_type', 'varchar(100)', notNull)
    // Stored exactly as hashed; served back byte for byte.
    .addColumn('content', 'text', notNull)
    .addColumn('size', 'integer', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .execute();

  await db.schema
    .createTable('twin_validator_keys')
    .addColumn('did', 'varchar(128)', (c) => c.notNull().primaryKey())
    .addColumn('public_key', 'varchar(64)', notNull)
    // Only for a key generated by the service (the configured key never leaves the environment).
    .addColumn('private_seed', 'varchar(64)')
    // 'generated' marks the one key generated and persisted; the unique constraint keeps two
    // instances starting at once from generating two.
    .addColumn('origin', 'varchar(16)', notNull)
    .addColumn('generated_slot', 'varchar(16)')
    .addColumn('created_at', 'varchar(32)', notNull)
    .addUniqueConstraint('twin_validator_keys_generated_slot_unique', ['generated_slot'])
    .execute();

  await db
    .insertInto('kpt_collections')
    .values({
      id: DEFAULT_COLLECTION_ID,
      name: 'Default collection',
      description: 'Claims submitted without a collectionId.',
      selection_method: null,
      created_by: SYSTEM_DID,
      created_at: new Date(0).toISOString(),
    })
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  for (const table of ['twin_validator_keys', 'twin_evidence_blobs', 'kpt_idempotency_keys', 'kpt_claims', 'kpt_collections', 'twin_relationships', 'twin_entities']) {
    await db.schema.dropTable(table).execute();
  }
}
