import { sql } from 'kysely';
import type { MigrationDb } from './index.ts';
import { createStatusTable } from './103_twins_credential_status.ts';

// A credential's revoked and suspended bits move onto its claim's row (one status row per claim
// at most, keyed by the claim's own status_list_index). A claim submission asks whether the
// other group has claims whose credential stands: with the bits on the row, that is a filter of
// the scan it makes anyway instead of an anti-join per test, which PostgreSQL planned anew for
// every claim (about a quarter of its CPU per claim under make bench). The partial index keeps
// the rows whose status ever changed, as the status table did: a status list is read from it.
export async function up(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('kpt_claims').addColumn('credential_revoked', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  await db.schema.alterTable('kpt_claims').addColumn('credential_suspended', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  // When the credential's status last changed; null until it first does.
  await db.schema.alterTable('kpt_claims').addColumn('credential_status_changed_at', 'varchar(32)').execute();
  await db
    .updateTable('kpt_claims')
    .set({
      credential_revoked: sql`(select s.revoked from twin_credential_statuses s where s.claim_id = kpt_claims.id)`,
      credential_suspended: sql`(select s.suspended from twin_credential_statuses s where s.claim_id = kpt_claims.id)`,
      credential_status_changed_at: sql`(select s.updated_at from twin_credential_statuses s where s.claim_id = kpt_claims.id)`,
    })
    .where(sql<boolean>`exists (select 1 from twin_credential_statuses s where s.claim_id = kpt_claims.id)`)
    .execute();
  await db.schema
    .createIndex('kpt_claims_credential_status_changed_index')
    .on('kpt_claims')
    .column('status_list_index')
    .where(sql.ref('credential_status_changed_at'), 'is not', null)
    .execute();
  await db.schema.dropTable('twin_credential_statuses').execute();
}

export async function down(db: MigrationDb): Promise<void> {
  await createStatusTable(db);
  await db
    .insertInto('twin_credential_statuses')
    .columns(['status_list_index', 'claim_id', 'revoked', 'suspended', 'updated_at'])
    .expression(
      db
        .selectFrom('kpt_claims')
        .select(['status_list_index', 'id', 'credential_revoked', 'credential_suspended', 'credential_status_changed_at'])
        .where('credential_status_changed_at', 'is not', null),
    )
    .execute();
  await db.schema.dropIndex('kpt_claims_credential_status_changed_index').execute();
  for (const column of ['credential_status_changed_at', 'credential_suspended', 'credential_revoked']) await db.schema.alterTable('kpt_claims').dropColumn(column).execute();
}
