// The outbox of area A's events (twin_events): written in the transaction of each change, paged
// by followers in commit order (the change feed, the webhook fan-out).
import { dbClientOf, type Db } from '../../platform/db/index.ts';
import { byInsertingTransaction, insertInSlices, locksUntilCommit, SEQ_ORDER, type CommitOrder, type Sql } from '../../platform/db/sql.ts';
import type { TwinEvents } from '../../../generated/db/tables.ts';
import type { Event, EventType } from '../../../generated/openapi/types.gen.ts';
import { findCollection } from '../claims/collections.repository.ts';
import { cursorNotIssued } from '../paging.ts';
import { EVENT_WRITERS, newEventId, type NewEvent, type StoredEvent } from './events.ts';

/** Events by transaction on PostgreSQL (inserts never wait for each other), by `seq` on SQLite (one writer). */
export function eventOrder(db: Db): CommitOrder {
  return dbClientOf(db) === 'postgres' ? byInsertingTransaction('twin_events', EVENT_WRITERS) : { ...SEQ_ORDER, anchoredTo: 'twin_events' };
}

/**
 * Call first in a transaction that may write events, before its first write or row lock (which
 * gives it its transaction id): the feed's followers then wait for it (see EVENT_WRITERS).
 */
export function openEventWrites(sql: Sql): Promise<void> {
  return locksUntilCommit(sql, [EVENT_WRITERS]);
}

/** The creator of a collection, who sees its events (null for a collection that is gone). */
export async function collectionOwner(sql: Sql, collectionId: string): Promise<string | null> {
  return (await findCollection(sql, collectionId))?.createdBy ?? null;
}

/** Writes events in the caller's transaction (opened with openEventWrites), in their order. */
export async function recordEvents(sql: Sql, events: readonly NewEvent[], at: string): Promise<void> {
  const rows = events.map((e) => ({
    id: newEventId(),
    type: e.type,
    occurred_at: at,
    submitted_by: e.submittedBy,
    collection_owner: e.collectionOwner,
    data: JSON.stringify(e.data),
  }));
  // A claim completing a large group's pending claims writes one event each.
  await insertInSlices(rows, (slice) => sql('twin_events').insert(slice));
}

type EventRow = Pick<TwinEvents, 'seq' | 'id' | 'type' | 'occurred_at' | 'submitted_by' | 'collection_owner' | 'data'>;

export const toEvent = (r: Pick<EventRow, 'id' | 'type' | 'occurred_at' | 'data'>): Event => ({
  id: r.id,
  type: r.type as EventType,
  timestamp: r.occurred_at,
  data: JSON.parse(r.data) as Event['data'],
});

export interface EventFilter {
  /** Only events this principal sees; undefined: every event (the webhook fan-out). */
  principal?: string;
  types?: readonly EventType[];
  afterSeq?: number;
  limit: number;
}

export interface EventWithAudience extends StoredEvent {
  submittedBy: string | null;
  collectionOwner: string | null;
}

/**
 * Events after a position, in commit order: only those no transaction in flight can precede, so
 * a follower never passes one committed later. 400 (`cursorParam`) for a position no event has.
 */
export async function eventsAfter(db: Db, f: EventFilter, cursorParam = 'after'): Promise<EventWithAudience[]> {
  const order = eventOrder(db);
  const q = db('twin_events').select('seq', 'id', 'type', 'occurred_at', 'submitted_by', 'collection_owner', 'data');
  if (order.horizon) q.whereRaw(order.horizon.sql, order.horizon.bindings);
  if (f.principal !== undefined) {
    const p = f.principal;
    q.where((w) => void w.where('submitted_by', p).orWhere('collection_owner', p));
  }
  if (f.types?.length) q.whereIn('type', f.types);
  if (f.afterSeq !== undefined) {
    const after = order.relativeTo('>', f.afterSeq);
    q.whereRaw(after.sql, after.bindings);
  }
  const rows = (await q.orderByRaw(order.orderBy('asc')).limit(f.limit)) as EventRow[];
  if (f.afterSeq !== undefined && !(await db('twin_events').first('seq').where('seq', f.afterSeq))) throw cursorNotIssued(cursorParam);
  return rows.map((r) => ({ seq: r.seq, event: toEvent(r), submittedBy: r.submitted_by, collectionOwner: r.collection_owner }));
}
