import type { Knex } from 'knex';
import { onPostgres } from '../../platform/db/dialect.ts';

// Issue 51. The outbox of area A's events (claims, credential statuses, draws), written in the
// transaction of the change each reports: the change feed (GET /v1/events) pages it, and the
// webhook dispatcher fans it out into deliveries. On PostgreSQL each row records its inserting
// transaction, so followers page it in an order no transaction in flight can insert before
// (sql.ts, byInsertingTransaction), as claims do (104): event writers never wait for each other.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('twin_events', (t) => {
    t.increments('seq').primary();
    t.string('id', 64).notNullable().unique();
    t.string('type', 64).notNullable();
    t.string('occurred_at', 32).notNullable();
    // Who sees the event: the claim's submitter (null for a draw) and the collection's creator.
    t.string('submitted_by', 128);
    t.string('collection_owner', 128);
    // The event's `data` member, as JSON text.
    t.text('data').notNullable();
  });
  if (onPostgres(knex)) {
    await knex.raw('alter table twin_events add column tx xid8 not null default pg_current_xact_id()');
    await knex.raw('create index twin_events_tx_seq_index on twin_events (tx, seq)');
  }
  await knex.schema.createTable('twin_webhook_subscriptions', (t) => {
    t.string('id', 64).notNullable().primary();
    t.string('principal_did', 128).notNullable();
    t.string('url', 2048).notNullable();
    // JSON array of event types.
    t.text('event_types').notNullable();
    // The Standard Webhooks secret, whsec_<base64>.
    t.string('secret', 128).notNullable();
    t.boolean('enabled').notNullable();
    t.integer('consecutive_failures').notNullable();
    t.string('disabled_reason', 512);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['principal_did'], 'twin_webhook_subscriptions_principal_index');
  });
  await knex.schema.createTable('twin_webhook_deliveries', (t) => {
    t.string('id', 64).notNullable().primary();
    t.string('subscription_id', 64).notNullable().references('id').inTable('twin_webhook_subscriptions').onDelete('CASCADE');
    t.string('event_id', 64).notNullable().references('id').inTable('twin_events');
    // pending (to be sent at next_attempt_at), succeeded, failed (given up).
    t.string('status', 16).notNullable();
    t.integer('attempts').notNullable();
    t.string('next_attempt_at', 32).notNullable();
    // An instance sending it holds it until then; past it, another instance may take it over.
    t.string('locked_until', 32);
    t.string('last_attempt_at', 32);
    t.integer('response_status');
    t.string('error', 512);
    t.string('created_at', 32).notNullable();
    t.string('delivered_at', 32);
    t.unique(['subscription_id', 'event_id'], { indexName: 'twin_webhook_deliveries_event_unique' });
    t.index(['status', 'next_attempt_at'], 'twin_webhook_deliveries_due_index');
  });
  // The position of the last event fanned out into deliveries (one row, shared by every instance).
  await knex.schema.createTable('twin_webhook_fanout', (t) => {
    t.string('name', 32).notNullable().primary();
    t.integer('after_seq');
  });
  await knex('twin_webhook_fanout').insert({ name: 'events', after_seq: null });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('twin_webhook_fanout');
  await knex.schema.dropTable('twin_webhook_deliveries');
  await knex.schema.dropTable('twin_webhook_subscriptions');
  await knex.schema.dropTable('twin_events');
}
