// Every item of a cursor-paginated list (a page is `{ items, nextCursor }`, the next page asked
// with `cursor`), read page by page as it is iterated.
import { listClaims, listCollections, listEntities, listEvents } from '../../generated/openapi/sdk.gen.js';
import type { Event, EventPage } from '../../generated/openapi/types.gen.js';

/** One page of a list operation. */
export interface Page<TItem> {
  items: TItem[];
  nextCursor?: string | null;
}

/**
 * The items of every page of a list operation (e.g. `listClaims`) from the one `options` asks
 * for, in order; the next page is asked for only when the items before are consumed. A page that
 * fails throws (as with `throwOnError`; a client of `createHearthClient` throws HearthApiError).
 */
export async function* paginate<TOptions extends { query?: object }, TItem>(
  operation: (options: TOptions & { throwOnError: true }) => Promise<{ data: Page<TItem> }>,
  options: TOptions,
): AsyncGenerator<TItem, void, undefined> {
  let query = options.query;
  for (;;) {
    const { data } = await operation({ ...options, query, throwOnError: true });
    yield* data.items;
    if (!data.nextCursor) return;
    query = { ...query, cursor: data.nextCursor };
  }
}

/** Every entity the filters match (GET /v1/entities), oldest first. */
export const allEntities = (options: Parameters<typeof listEntities>[0] = {}) => paginate(listEntities, options);

/** Every claim the filters match (GET /v1/claims). */
export const allClaims = (options: Parameters<typeof listClaims>[0] = {}) => paginate(listClaims, options);

/** Every collection (GET /v1/collections). */
export const allCollections = (options: Parameters<typeof listCollections>[0] = {}) => paginate(listCollections, options);

/**
 * The change feed (GET /v1/events) page by page, from `query.after` (or its first event) until it
 * is caught up (a page with no events). Keep the last page's `nextCursor` and pass it as `after`
 * to go on from there later: every event comes once, in commit order.
 */
export async function* eventPages(options: Parameters<typeof listEvents>[0] = {}): AsyncGenerator<EventPage, void, undefined> {
  let query = options.query;
  for (;;) {
    const { data } = await listEvents({ ...options, query, throwOnError: true });
    if (!data.items.length) return;
    yield data;
    if (!data.nextCursor) return;
    query = { ...query, after: data.nextCursor };
  }
}

/** Every event of the change feed from `query.after` until it is caught up (eventPages, item by item). */
export async function* allEvents(options: Parameters<typeof listEvents>[0] = {}): AsyncGenerator<Event, void, undefined> {
  for await (const page of eventPages(options)) yield* page.items;
}
