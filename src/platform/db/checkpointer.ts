// SQLite in WAL mode copies the log back into the database file (a checkpoint, ending in an
// fsync) inside whichever COMMIT takes the log past `wal_autocheckpoint` pages: on this machine
// that averaged 130 µs on every claim submission, spent on the event loop. A worker thread with
// a connection of its own checkpoints instead, off the request path, so commits only append.
// The request connection keeps a far higher autocheckpoint as a bound on the log, for when
// writes outpace the worker: it then only finishes what the worker has not yet copied.
//
// The log starts over from its beginning only when a transaction begins with every frame
// copied. So the worker looks again within a few ms of any new frames: it copies each commit's
// frames in the pause before the next one, and the log keeps restarting. Checkpointing every
// 200 ms under load left more frames than it could copy in a pause; the log then grew to the
// foreground bound and, about once a second in `make bench`, a COMMIT on the event loop ran
// the rest of the checkpoint with its fsync: 25-30 ms in which no request moved.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Pages the request connection lets the log reach before checkpointing itself (~40 MB). */
export const FOREGROUND_CHECKPOINT_PAGES = 10_000;
/** How soon the worker looks again after the log has grown. */
export const CHECKPOINT_CATCH_UP_MS = 2;
/** The longest the worker waits between looks, once the log has stopped growing. */
export const CHECKPOINT_INTERVAL_MS = 200;

// A worker ended (by process exit or terminate) while inside a better-sqlite3 call aborts the
// whole process, so the worker enters SQLite only by moving a shared state from IDLE to BUSY,
// and stopping waits for IDLE before moving it to STOPPED, after which the worker never calls in.
const IDLE = 0;
const BUSY = 1;
const STOPPED = 2;
const STOP_WAIT_MS = 5000;

const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

// Plain CommonJS for the worker (it runs outside tsx's loader). It starts BUSY while it opens
// its connection.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const state = new Int32Array(workerData.state);
const Database = require(workerData.driver);
const db = new Database(workerData.file);
const release = () => { Atomics.store(state, 0, ${IDLE}); Atomics.notify(state, 0); };
release();
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
let seenFrames = -1;
let wait = workerData.catchUpMs;
const look = () => {
  if (Atomics.compareExchange(state, 0, ${IDLE}, ${BUSY}) === ${IDLE}) {
    let frames = seenFrames;
    try { frames = checkpoint.get().log; } catch {}
    release();
    wait = frames !== seenFrames ? workerData.catchUpMs : Math.min(wait * 2, workerData.intervalMs);
    seenFrames = frames;
  }
  setTimeout(look, wait);
};
setTimeout(look, wait);
`;

export interface Checkpointer {
  /** Waits (briefly, synchronously) until the worker is outside SQLite, then ends it. */
  stop(): void;
}

const running = new Set<Checkpointer>();
// process.exit() ends workers after its 'exit' listeners: stop them cleanly first.
process.on('exit', () => {
  for (const c of [...running]) c.stop();
});

function quiesce(state: Int32Array): void {
  const deadline = Date.now() + STOP_WAIT_MS;
  while (Atomics.compareExchange(state, 0, IDLE, STOPPED) === BUSY && Date.now() < deadline) Atomics.wait(state, 0, BUSY, 50);
  Atomics.store(state, 0, STOPPED);
}

export function startCheckpointer(file: string): Checkpointer {
  const state = new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(state, 0, BUSY);
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS, catchUpMs: CHECKPOINT_CATCH_UP_MS, driver: DRIVER, state: state.buffer } });
  const checkpointer: Checkpointer = {
    stop() {
      if (!running.delete(checkpointer)) return;
      quiesce(state);
      void worker.terminate();
    },
  };
  // Never what keeps a process alive; a worker that fails leaves the foreground bound in charge.
  worker.unref();
  worker.on('error', () => Atomics.store(state, 0, STOPPED));
  worker.on('exit', () => Atomics.store(state, 0, STOPPED));
  running.add(checkpointer);
  return checkpointer;
}
