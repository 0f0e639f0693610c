// The state the checkpointer (checkpointer.ts) and its thread (checkpointer.worker.ts) share.
// A worker ended (by process exit or terminate) while inside a better-sqlite3 call aborts the
// whole process, so the worker enters SQLite only by moving the state from IDLE to BUSY, and
// stopping waits for IDLE before moving it to STOPPED, after which the worker never calls in.
export const IDLE = 0;
export const BUSY = 1;
export const STOPPED = 2;

export interface CheckpointerData {
  file: string;
  intervalMs: number;
  catchUpMs: number;
  /** One Int32: IDLE, BUSY or STOPPED. */
  state: SharedArrayBuffer;
}
