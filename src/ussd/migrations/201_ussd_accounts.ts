import { notNull, type MigrationDb } from './index.ts';

// USSD customers. The PIN is stored only AES-256-GCM encrypted; failed attempts and the lock
// live here (not in the session) so three wrong PINs lock the account across sessions.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('ussd_accounts')
    .addColumn('id', 'varchar(32)', (c) => c.notNull().primaryKey())
    .addColumn('customer_id', 'varchar(16)', notNull)
    .addColumn('phone_number', 'varchar(16)', notNull)
    .addColumn('name', 'varchar(60)', notNull)
    .addColumn('village', 'varchar(60)')
    .addColumn('test_group', 'varchar(16)', notNull)
    // Null only while the account is being created: the row comes first, so a failure creating
    // the household twin leaves no orphan household (the row is deleted instead).
    .addColumn('household_did', 'varchar(512)')
    .addColumn('pin_encrypted', 'text', notNull)
    .addColumn('failed_pin_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', notNull)
    .addColumn('updated_at', 'varchar(32)', notNull)
    .addUniqueConstraint('ussd_accounts_customer_id_unique', ['customer_id'])
    .addUniqueConstraint('ussd_accounts_phone_number_unique', ['phone_number'])
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('ussd_accounts').execute();
}
