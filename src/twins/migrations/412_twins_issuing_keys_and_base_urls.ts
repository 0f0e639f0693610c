import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// Issue 53. Each validator key keeps status lists of its own, signed by it for the life of its
// credentials: one key is current (it issues), the others are retired (they still sign their
// lists). A list also names the public base URL its credentials point at it under. The public
// base URL is the database's, shared by every instance: one is current, earlier ones stay
// recognised.
const LIST_SIZE = 131_072;

/** The index counter as this migration reads it (it drops the table). */
type CounterRow = { name: string; next_index: number | string; created_at: string };

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('twin_validator_keys', (t) => {
    // 'current' on the one key that issues; the unique constraint keeps it to one.
    t.string('current_slot', 16);
    t.string('retired_at', 32);
    t.unique(['current_slot'], { indexName: 'twin_validator_keys_current_slot_unique' });
  });
  await knex.schema.createTable('twin_status_lists', (t) => {
    // The list number of the status list URLs (/v1/credentials/status/<purpose>/<list>).
    t.integer('list').notNullable().primary();
    // Null on lists made before this migration: the key current at the next start adopts them.
    t.string('issuer_did', 128);
    t.string('base_url', 2048);
    // Hex secret of the permutation that spreads the list's positions; null: handed out in order.
    t.string('position_key', 64);
    // Positions handed out so far (a list is full at 131,072).
    t.integer('next_position').notNullable();
    t.string('created_at', 32).notNullable();
    t.index(['issuer_did', 'next_position'], 'twin_status_lists_issuer_index');
  });
  const counter = await knex<CounterRow>('twin_status_index_counter').first('next_index', 'created_at').where('name', 'credentials');
  const handedOut = Number(counter?.next_index ?? 0);
  // The lists indexes were handed out of, in order: closed, so new indexes come from new lists.
  for (let list = 0; list * LIST_SIZE < handedOut; list++) {
    await knex('twin_status_lists').insert({ list, issuer_did: null, base_url: null, position_key: null, next_position: LIST_SIZE, created_at: counter!.created_at });
  }
  await knex.schema.dropTable('twin_status_index_counter');
  await knex.schema.createTable('twin_public_base_urls', (t) => {
    t.string('url', 2048).notNullable().primary();
    // 'current' on the URL new credentials are signed under; the unique constraint keeps it to one.
    t.string('current_slot', 16);
    t.string('recorded_at', 32).notNullable();
    t.string('retired_at', 32);
    t.unique(['current_slot'], { indexName: 'twin_public_base_urls_current_slot_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('twin_public_base_urls');
  const last = (await knex('twin_status_lists').max({ list: 'list' }).first()) as { list: number | string | null } | undefined;
  const first = (await knex('twin_status_lists').min({ at: 'created_at' }).first()) as { at: string | null } | undefined;
  await knex.schema.createTable('twin_status_index_counter', (t) => {
    t.string('name', 32).notNullable().primary();
    t.bigInteger('next_index').notNullable();
    t.string('created_at', 32).notNullable();
  });
  // Past every list used, so no index is handed out twice.
  const nextIndex = last?.list === null || last?.list === undefined ? 0 : (Number(last.list) + 1) * LIST_SIZE;
  await knex('twin_status_index_counter').insert({ name: 'credentials', next_index: nextIndex, created_at: first?.at ?? new Date().toISOString() });
  await knex.schema.dropTable('twin_status_lists');
  await knex.schema.alterTable('twin_validator_keys', (t) => {
    t.dropUnique([], 'twin_validator_keys_current_slot_unique');
  });
  await dropColumns(knex, 'twin_validator_keys', 'retired_at', 'current_slot');
}
