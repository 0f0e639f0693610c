import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_user_preferences', (t) => {
    t.string('user_did', 512).notNullable();
    t.string('room_id', 255).notNullable();
    t.string('agent_name', 80);
    t.string('user_name', 80);
    t.string('language', 35);
    t.string('tone', 120);
    t.string('length', 16);
    t.string('format', 16);
    t.string('formality', 16);
    t.string('emoji', 16);
    t.text('custom_instructions');
    t.string('updated_at', 32).notNullable();
    // One record per user and room; the upsert of set_user_preferences targets this key.
    t.primary(['user_did', 'room_id'], 'agent_user_preferences_pkey');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_user_preferences');
}
