import type { Knex } from 'knex';

// Partners polling `GET /v1/claims?updatedSince=` ask for the few claims changed lately: without
// this index each poll reads the whole table in commit order to find them.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.index(['updated_at'], 'kpt_claims_updated_at_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_claims', (t) => {
    t.dropIndex(['updated_at'], 'kpt_claims_updated_at_index');
  });
}
