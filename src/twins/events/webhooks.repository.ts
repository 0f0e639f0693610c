// Webhook subscriptions and their deliveries (the only SQL of webhooks). Deliveries are made
// from the outbox by a fan-out that follows it in commit order (one at a time across instances:
// its position's row is locked), and are sent by whichever instance leases them first.
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, insertInSlices, type Sql } from '../../platform/db/sql.ts';
import type { TwinWebhookDeliveries, TwinWebhookSubscriptions } from '../../../generated/db/tables.ts';
import type { Event, EventType, Webhook, WebhookDelivery } from '../../../generated/openapi/types.gen.ts';
import { eventsAfter, toEvent } from './events.repository.ts';

type SubscriptionRow = TwinWebhookSubscriptions;
type DeliveryRow = TwinWebhookDeliveries;

export interface Subscription extends Webhook {
  principal: string;
  secret: string;
}

const toSubscription = (r: SubscriptionRow): Subscription => ({
  id: r.id,
  principal: r.principal_did,
  url: r.url,
  eventTypes: JSON.parse(r.event_types) as EventType[],
  enabled: Boolean(r.enabled),
  ...(r.disabled_reason ? { disabledReason: r.disabled_reason } : {}),
  consecutiveFailures: r.consecutive_failures,
  secret: r.secret,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toDelivery = (r: DeliveryRow & { type: string }): WebhookDelivery => ({
  id: r.id,
  eventId: r.event_id,
  eventType: r.type as EventType,
  status: r.status as WebhookDelivery['status'],
  attempts: r.attempts,
  ...(r.status === 'pending' ? { nextAttemptAt: r.next_attempt_at } : {}),
  ...(r.last_attempt_at ? { lastAttemptAt: r.last_attempt_at } : {}),
  ...(r.response_status !== null ? { responseStatus: r.response_status } : {}),
  ...(r.error ? { error: r.error } : {}),
  createdAt: r.created_at,
  ...(r.delivered_at ? { deliveredAt: r.delivered_at } : {}),
});

export interface NewSubscription {
  id: string;
  principal: string;
  url: string;
  eventTypes: readonly EventType[];
  secret: string;
  at: string;
}

export interface SubscriptionChange {
  url?: string;
  eventTypes?: readonly EventType[];
  enabled?: boolean;
  at: string;
}

type LeaseRow = { id: string; attempts: number; subscription_id: string; url: string; secret: string; event_id: string; type: string; occurred_at: string; data: string };

/** A delivery leased to this instance, with what it sends. */
export interface LeasedDelivery {
  id: string;
  attempts: number;
  lease: string;
  subscription: Pick<Subscription, 'id' | 'url' | 'secret'>;
  event: Event;
}

export interface AttemptOutcome {
  ok: boolean;
  responseStatus?: number;
  error?: string;
}

export class WebhookRepository {
  constructor(private readonly db: Db) {}

  async insert(s: NewSubscription): Promise<void> {
    await this.db('twin_webhook_subscriptions').insert({
      id: s.id, principal_did: s.principal, url: s.url, event_types: JSON.stringify(s.eventTypes), secret: s.secret,
      enabled: true, consecutive_failures: 0, disabled_reason: null, created_at: s.at, updated_at: s.at,
    });
  }

  async find(principal: string, id: string): Promise<Subscription | undefined> {
    const row = await this.db('twin_webhook_subscriptions').where({ id, principal_did: principal }).first();
    return row && toSubscription(row);
  }

  async list(principal: string): Promise<Subscription[]> {
    return (await this.db('twin_webhook_subscriptions').where('principal_did', principal).orderBy([{ column: 'created_at' }, { column: 'id' }])).map(toSubscription);
  }

  /** Changes a subscription; enabling it clears its failures and why it was disabled. */
  async update(id: string, c: SubscriptionChange): Promise<void> {
    await this.db('twin_webhook_subscriptions').where('id', id).update({
      ...(c.url !== undefined ? { url: c.url } : {}),
      ...(c.eventTypes !== undefined ? { event_types: JSON.stringify(c.eventTypes) } : {}),
      ...(c.enabled !== undefined ? { enabled: c.enabled } : {}),
      ...(c.enabled ? { consecutive_failures: 0, disabled_reason: null } : {}),
      ...(c.enabled === false ? { disabled_reason: null } : {}),
      updated_at: c.at,
    });
  }

  async delete(id: string): Promise<void> {
    await inTransaction(this.db, async (sql) => {
      await sql('twin_webhook_deliveries').where('subscription_id', id).delete();
      await sql('twin_webhook_subscriptions').where('id', id).delete();
    });
  }

  /** The newest deliveries of a subscription. */
  async deliveries(subscriptionId: string, limit: number): Promise<WebhookDelivery[]> {
    const rows = await this.db('twin_webhook_deliveries as d')
      .join('twin_events as e', 'e.id', 'd.event_id')
      .where('d.subscription_id', subscriptionId)
      .select('d.*', 'e.type')
      .orderBy([{ column: 'd.created_at', order: 'desc' }, { column: 'd.id', order: 'desc' }])
      .limit(limit);
    return (rows as (DeliveryRow & { type: string })[]).map(toDelivery);
  }

  async delivery(subscriptionId: string, id: string): Promise<WebhookDelivery | undefined> {
    const row = await this.db('twin_webhook_deliveries as d')
      .join('twin_events as e', 'e.id', 'd.event_id')
      .where({ 'd.id': id, 'd.subscription_id': subscriptionId })
      .first<(DeliveryRow & { type: string }) | undefined>('d.*', 'e.type');
    return row && toDelivery(row);
  }

  /** Makes a delivery pending again, due at `at` (its attempts count on). */
  async redeliver(id: string, at: string): Promise<void> {
    await this.db('twin_webhook_deliveries').where('id', id).update({ status: 'pending', next_attempt_at: at, locked_until: null });
  }

  /**
   * Turns up to `limit` events after the fan-out's position into deliveries, one for each
   * subscription whose principal sees the event, that takes its type and that was made before it
   * (disabled ones too: enabled again, they get what happened meanwhile), and moves the position
   * on, in one transaction: one instance at a time (the position's row is locked), and the
   * position passes only events no transaction in flight can precede (eventsAfter). The events
   * fanned out.
   */
  async fanOut(limit: number, at: string): Promise<number> {
    // Read first without the lock (no write transaction, the usual case: nothing new).
    const position = await this.db('twin_webhook_fanout').where('name', 'events').first();
    if (!(await eventsAfter(this.db, { afterSeq: position?.after_seq ?? undefined, limit: 1 })).length) return 0;
    return inTransaction(this.db, async (sql) => {
      const position = (await sql('twin_webhook_fanout').where('name', 'events').forUpdate().first())!;
      const events = await eventsAfter(sql, { afterSeq: position.after_seq ?? undefined, limit });
      if (!events.length) return 0;
      const principals = [...new Set(events.flatMap((e) => [e.submittedBy, e.collectionOwner]).filter((p) => p !== null))];
      const subscriptions = principals.length ? (await sql('twin_webhook_subscriptions').whereIn('principal_did', principals)).map(toSubscription) : [];
      const rows = events.flatMap((e) =>
        subscriptions
          .filter((s) => (s.principal === e.submittedBy || s.principal === e.collectionOwner) && s.eventTypes.includes(e.event.type) && e.event.timestamp >= s.createdAt)
          .map((s) => ({ id: newDeliveryId(), subscription_id: s.id, event_id: e.event.id, status: 'pending', attempts: 0, next_attempt_at: at, created_at: at })),
      );
      await insertInSlices(rows, (slice) => sql('twin_webhook_deliveries').insert(slice).onConflict(['subscription_id', 'event_id']).ignore());
      await sql('twin_webhook_fanout').where('name', 'events').update({ after_seq: events.at(-1)!.seq });
      return events.length;
    });
  }

  /**
   * Leases up to `limit` pending deliveries due at `now` (of enabled subscriptions) until
   * `lease`: each is taken with a conditional update, so of instances racing for one, one gets
   * it; a lease left by a crashed instance expires and the delivery is taken again.
   */
  async leaseDue(now: string, lease: string, limit: number): Promise<LeasedDelivery[]> {
    const due = await this.db('twin_webhook_deliveries as d')
      .join('twin_webhook_subscriptions as s', 's.id', 'd.subscription_id')
      .where({ 'd.status': 'pending', 's.enabled': true })
      .where('d.next_attempt_at', '<=', now)
      .where((w) => void w.whereNull('d.locked_until').orWhere('d.locked_until', '<=', now))
      .orderBy('d.next_attempt_at')
      .limit(limit)
      .select<{ id: string }[]>('d.id');
    const leased: LeasedDelivery[] = [];
    for (const { id } of due) {
      const taken = await this.db('twin_webhook_deliveries')
        .where({ id, status: 'pending' })
        .where((w) => void w.whereNull('locked_until').orWhere('locked_until', '<=', now))
        .update({ locked_until: lease });
      if (!taken) continue;
      const row = await this.db('twin_webhook_deliveries as d')
        .join('twin_webhook_subscriptions as s', 's.id', 'd.subscription_id')
        .join('twin_events as e', 'e.id', 'd.event_id')
        .where('d.id', id)
        .first<LeaseRow | undefined>('d.id', 'd.attempts', 's.id as subscription_id', 's.url', 's.secret', 'e.id as event_id', 'e.type', 'e.occurred_at', 'e.data');
      if (!row) continue;
      leased.push({
        id: row.id,
        attempts: row.attempts,
        lease,
        subscription: { id: row.subscription_id, url: row.url, secret: row.secret },
        event: toEvent({ id: row.event_id, type: row.type, occurred_at: row.occurred_at, data: row.data }),
      });
    }
    return leased;
  }

  /**
   * Records an attempt of a leased delivery (unless its lease was lost: another instance took it
   * over), and the subscription's run of failures: reset by a success; a failure adds one, and
   * `maxConsecutiveFailures` of them disable the subscription. `retryAt`: when a failed delivery
   * is tried again; undefined, it is given up.
   */
  async recordAttempt(d: LeasedDelivery, outcome: AttemptOutcome, at: string, retryAt: string | undefined, maxConsecutiveFailures: number): Promise<void> {
    await inTransaction(this.db, async (sql: Sql) => {
      const recorded = await sql('twin_webhook_deliveries').where({ id: d.id, locked_until: d.lease }).update({
        status: outcome.ok ? 'succeeded' : retryAt ? 'pending' : 'failed',
        attempts: d.attempts + 1,
        ...(retryAt ? { next_attempt_at: retryAt } : {}),
        locked_until: null,
        last_attempt_at: at,
        response_status: outcome.responseStatus ?? null,
        error: outcome.error?.slice(0, 500) ?? null,
        ...(outcome.ok ? { delivered_at: at } : {}),
      });
      if (!recorded) return;
      const subscriptions = sql('twin_webhook_subscriptions').where('id', d.subscription.id);
      if (outcome.ok) {
        await subscriptions.update({ consecutive_failures: 0 });
        return;
      }
      await subscriptions.clone().increment('consecutive_failures', 1);
      await subscriptions.clone().where('enabled', true).where('consecutive_failures', '>=', maxConsecutiveFailures).update({
        enabled: false,
        disabled_reason: `disabled after ${maxConsecutiveFailures} consecutive failed deliveries (last: ${outcome.error ?? `HTTP ${outcome.responseStatus}`})`.slice(0, 500),
        updated_at: at,
      });
    });
  }
}

/** 128 random bits as 32 hex digits. */
const newDeliveryId = () => `dlv_${crypto.randomUUID().replaceAll('-', '')}`;
