// The change feed (GET /v1/events): the caller's events in commit order, by cursor.
import type { Db } from '../../platform/db/index.ts';
import type { EventPage, ListEventsData } from '../../../generated/openapi/types.gen.ts';
import { decodeCursor, encodeCursor } from '../paging.ts';
import { eventsAfter } from './events.repository.ts';

export type EventFeedQuery = NonNullable<ListEventsData['query']>;

export class EventService {
  constructor(private readonly db: Db) {}

  /**
   * One page of the events `principal` sees after `after`. The next cursor names the last event
   * given, or is `after` again on an empty page: a follower polls with it until more commit.
   */
  async list(principal: string, q: EventFeedQuery): Promise<EventPage> {
    const rows = await eventsAfter(this.db, { principal, types: q.types, afterSeq: decodeCursor(q.after, 'after'), limit: q.limit ?? 50 });
    const last = rows.at(-1);
    const next = last ? encodeCursor(last.seq) : q.after;
    return { items: rows.map((r) => r.event), ...(next ? { nextCursor: next } : {}) };
  }
}
