import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_user_preferences', (t) => {
    t.string('user_did', 512).notNullable();
    t.string('room_id', 255).notNullable();
    t.string('agent_name', 80).nullable();
    t.string('user_name', 80).nullable();
    t.string('language', 35).nullable();
    t.string('tone', 120).nullable();
    t.string('length', 16).nullable();
    t.string('format', 16).nullable();
    t.string('formality', 16).nullable();
    t.string('emoji', 16).nullable();
    t.text('custom_instructions').nullable();
    t.string('updated_at', 32).notNullable();
    // One record per user and room; the upsert of set_user_preferences targets this key.
    t.primary(['user_did', 'room_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_user_preferences');
}
