import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// The parameters a campaign report's emission reductions are computed with, as JSON text: a
// collection made before sets none, and its report says so until its creator sets them.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_collections', (t) => {
    t.text('emission_parameters');
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropColumns(knex, 'kpt_collections', 'emission_parameters');
}
