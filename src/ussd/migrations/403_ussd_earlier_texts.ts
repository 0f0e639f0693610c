import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// A session's earlier texts, as short keyed digests (the texts hold PINs): the text of each of
// its hops before the last is a prefix of the last at a `*` (gateways send the whole text), so a
// gateway's late repeat of an earlier hop can be told from a new keypress and change nothing.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ussd_sessions', (t) => {
    t.text('last_text_earlier').notNullable().defaultTo('');
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropColumns(knex, 'ussd_sessions', 'last_text_earlier');
}
