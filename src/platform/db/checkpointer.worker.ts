// The checkpointer's thread (checkpointer.ts): a connection of its own that copies the log back
// into the database file, looking again soon after the log grows and less often once it stops.
import { workerData } from 'node:worker_threads';
import type { Statement } from 'better-sqlite3';
import { BUSY, IDLE, type CheckpointerData } from './checkpointer-state.ts';

const data = workerData as CheckpointerData;
const state = new Int32Array(data.state);
const enter = () => Atomics.compareExchange(state, 0, IDLE, BUSY) === IDLE;
const release = () => {
  Atomics.store(state, 0, IDLE);
  Atomics.notify(state, 0);
};

// Loading the driver and opening the connection are inside SQLite too. Stopped before this
// thread got here, it never opens one and simply ends.
if (enter()) {
  let checkpoint: Statement;
  try {
    const { default: Database } = await import('better-sqlite3');
    checkpoint = new Database(data.file).prepare('pragma wal_checkpoint(PASSIVE)');
  } finally {
    release();
  }
  let seenFrames = -1;
  let wait = data.catchUpMs;
  const look = () => {
    if (!enter()) return;
    let frames = seenFrames;
    try {
      frames = (checkpoint.get() as { log: number }).log;
    } catch {
      // A failed look (the database busy or gone) changes nothing: the next one tries again.
    }
    release();
    wait = frames !== seenFrames ? data.catchUpMs : Math.min(wait * 2, data.intervalMs);
    seenFrames = frames;
    setTimeout(look, wait);
  };
  setTimeout(look, wait);
}
