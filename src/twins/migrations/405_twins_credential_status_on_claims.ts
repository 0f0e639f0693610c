import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';
import { createStatusTable } from './103_twins_credential_status.ts';

// A credential's revoked and suspended bits move onto its claim's row (one status row per claim
// at most, keyed by the claim's own status_list_index). A claim submission asks whether the
// other group has claims whose credential stands: with the bits on the row, that is a filter of
// the scan it makes anyway instead of an anti-join per test, which PostgreSQL planned anew for
// every claim (about a quarter of its CPU per claim under make bench). The partial index keeps
// the rows whose status ever changed, as the status table did: a status list is read from it.
/** The columns this migration adds, as it fills them (from another table). */
type StatusColumns = Record<'credential_revoked' | 'credential_suspended' | 'credential_status_changed_at', Knex.Raw>;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.boolean('credential_revoked').notNullable().defaultTo(false);
    t.boolean('credential_suspended').notNullable().defaultTo(false);
    // When the credential's status last changed; null until it first does.
    t.string('credential_status_changed_at', 32);
  });
  await knex<StatusColumns>('kpt_claims')
    .update({
      credential_revoked: knex.raw('(select s.revoked from twin_credential_statuses s where s.claim_id = kpt_claims.id)'),
      credential_suspended: knex.raw('(select s.suspended from twin_credential_statuses s where s.claim_id = kpt_claims.id)'),
      credential_status_changed_at: knex.raw('(select s.updated_at from twin_credential_statuses s where s.claim_id = kpt_claims.id)'),
    })
    .whereExists(knex('twin_credential_statuses as s').select(knex.raw('1')).whereRaw('s.claim_id = kpt_claims.id'));
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.index(['status_list_index'], 'kpt_claims_credential_status_changed_index', { predicate: knex.whereNotNull('credential_status_changed_at') });
  });
  await knex.schema.dropTable('twin_credential_statuses');
}

export async function down(knex: Knex): Promise<void> {
  await createStatusTable(knex);
  // Selected in the order of the table's columns (status_list_index, claim_id, revoked, suspended, updated_at).
  await knex('twin_credential_statuses').insert(
    knex('kpt_claims').select('status_list_index', 'id', 'credential_revoked', 'credential_suspended', 'credential_status_changed_at').whereNotNull('credential_status_changed_at'),
  );
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.dropIndex([], 'kpt_claims_credential_status_changed_index');
  });
  await dropColumns(knex, 'kpt_claims', 'credential_status_changed_at', 'credential_suspended', 'credential_revoked');
}
