import { doubleType, notNull, type MigrationDb } from './index.ts';

// One fuel reading per account and day (a second entry the same day replaces the first).
// `claim_id` marks the readings a KPT claim used, so the next claim takes only new days.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('ussd_fuel_logs')
    .addColumn('id', 'varchar(32)', (c) => c.notNull().primaryKey())
    .addColumn('account_id', 'varchar(32)', notNull)
    .addColumn('log_date', 'varchar(10)', notNull)
    .addColumn('kg', doubleType(db), notNull)
    .addColumn('claim_id', 'varchar(100)')
    .addColumn('created_at', 'varchar(32)', notNull)
    .addColumn('updated_at', 'varchar(32)', notNull)
    .addForeignKeyConstraint('ussd_fuel_logs_account_id_foreign', ['account_id'], 'ussd_accounts', ['id'], (c) => c.onDelete('cascade'))
    .addUniqueConstraint('ussd_fuel_logs_account_day_uq', ['account_id', 'log_date'])
    .execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await db.schema.dropTable('ussd_fuel_logs').execute();
}
