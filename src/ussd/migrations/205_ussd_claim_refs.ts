import { notNull, type MigrationDb } from './index.ts';

// The short reference a household reads out (8 characters) for each claim it sent, so a field
// agent or operator finds the claim behind it.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('ussd_claim_refs')
    .addColumn('ref', 'varchar(8)', (c) => c.notNull().primaryKey())
    .addColumn('claim_id', 'varchar(100)', notNull)
    .addColumn('account_id', 'varchar(32)', notNull)
    .addColumn('created_at', 'varchar(32)', notNull)
    .addUniqueConstraint('ussd_claim_refs_claim_id_unique', ['claim_id'])
    .addForeignKeyConstraint('ussd_claim_refs_account_id_foreign', ['account_id'], 'ussd_accounts', ['id'], (c) => c.onDelete('cascade'))
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('ussd_claim_refs').execute();
}
