// Opaque cursors for the /v1 list endpoints: base64url of the last row's sequence number, so
// pages stay stable while rows are added.
import { MAX_SEQ } from '../platform/db/sql.ts';
import { refusedInput } from '../platform/domain-errors.ts';

export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

export function encodeCursor(seq: number): string {
  return Buffer.from(`s:${seq}`).toString('base64url');
}

/** 400 naming the parameter: a cursor this service did not issue. */
export const cursorNotIssued = (param = 'cursor') =>
  refusedInput('The cursor is not one this service issued.', [{ path: [param], message: 'is not a cursor returned by a previous page', rule: 'cursor' }]);

/** The sequence number a cursor stands for, in the one spelling encodeCursor gives; 400 when it is not ours. */
export function decodeCursor(cursor: string | undefined, param = 'cursor'): number | undefined {
  if (cursor === undefined) return undefined;
  const m = /^s:(0|[1-9]\d{0,9})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || Number(m[1]) > MAX_SEQ || encodeCursor(Number(m[1])) !== cursor) throw cursorNotIssued(param);
  return Number(m[1]);
}

/** Rows fetched with limit + 1: trims the extra row and derives the next cursor from the last kept. */
export function pageOf<R extends { seq: number }, T>(rows: R[], limit: number, map: (r: R) => T): Page<T> {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  return {
    items: kept.map(map),
    ...(rows.length > limit && last ? { nextCursor: encodeCursor(last.seq) } : {}),
  };
}
