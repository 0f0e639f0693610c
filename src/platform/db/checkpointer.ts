// SQLite in WAL mode copies the log back into the database file (a checkpoint, ending in an
// fsync) inside whichever COMMIT takes the log past `wal_autocheckpoint` pages: on this machine
// that averaged 130 µs on every claim submission, spent on the event loop. A worker thread with
// a connection of its own checkpoints instead, off the request path, so commits only append.
// The request connection keeps a far higher autocheckpoint as a bound on the log, for when
// writes outpace the worker: it then only finishes what the worker has not yet copied.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Pages the request connection lets the log reach before checkpointing itself (~40 MB). */
export const FOREGROUND_CHECKPOINT_PAGES = 10_000;
/** How often the worker checkpoints. */
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
setInterval(() => {
  if (Atomics.compareExchange(state, 0, ${IDLE}, ${BUSY}) !== ${IDLE}) return;
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  release();
}, workerData.intervalMs);
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

export function startCheckpointer(file: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpointer {
  const state = new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(state, 0, BUSY);
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, intervalMs, driver: DRIVER, state: state.buffer } });
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
