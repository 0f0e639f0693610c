import type { Knex } from 'knex';
import { dropColumns } from '../../platform/db/dialect.ts';

// KPT rule 5 (random selection verified) is decided by a collection's selection design, as data
// (JSON text), and by the draws that list its frame and the households drawn. A collection made
// before declares none: its free-text selection method proves no draw, so no new claim passes
// rule 5 in it until its creator declares a design (PATCH /v1/collections/{id}). `ussd` gets its
// design from migration 411.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kpt_collections', (t) => {
    t.text('selection_design');
  });
  await knex.schema.createTable('kpt_draws', (t) => {
    t.string('id', 40).notNullable().primary('kpt_draws_pkey');
    t.string('collection_id', 64).notNullable().references('id').inTable('kpt_collections').withKeyName('kpt_draws_collection_id_foreign');
    t.string('design', 32).notNullable();
    t.string('algorithm', 64).notNullable();
    t.string('status', 16).notNullable();
    t.string('frame_digest', 64).notNullable();
    t.integer('frame_size').notNullable();
    // Stratum name ('' for none) -> households to draw, as JSON text.
    t.text('sample_sizes').notNullable();
    t.string('seed_commitment', 64);
    // Stored when the draw is committed; answered only once it is revealed.
    t.string('seed', 64);
    // A draw is replaced at most once.
    t.string('replaces', 40).unique({ indexName: 'kpt_draws_replaces_unique' });
    t.string('created_by', 512).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('revealed_at', 32);
    t.index(['collection_id'], 'kpt_draws_collection_id_index');
  });
  await knex.schema.createTable('kpt_draw_households', (t) => {
    t.string('draw_id', 40).notNullable().references('id').inTable('kpt_draws').withKeyName('kpt_draw_households_draw_id_foreign');
    t.string('household_did', 512).notNullable();
    t.string('stratum', 64).notNullable();
    // Position among the drawn households of its stratum (0 first); null: in the frame, not drawn.
    t.integer('drawn_rank');
    t.primary(['draw_id', 'household_did'], 'kpt_draw_households_pkey');
    t.index(['household_did'], 'kpt_draw_households_household_did_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('kpt_draw_households');
  await knex.schema.dropTable('kpt_draws');
  await dropColumns(knex, 'kpt_collections', 'selection_design');
}
