import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// The language a household chose (a catalogue code: en, sw), kept on the account so every
// later session starts in it.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ussd_accounts', (t) => {
    t.string('language', 8).notNullable().defaultTo('en');
  });
}

export async function down(knex: Knex): Promise<void> {
  await dropColumns(knex, 'ussd_accounts', 'language');
}
