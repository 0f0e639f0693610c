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
import { startWorker } from '../worker.ts';
import { BUSY, IDLE, STOPPED, type CheckpointerData } from './checkpointer-state.ts';

/** Pages the request connection lets the log reach before checkpointing itself (~40 MB). */
export const FOREGROUND_CHECKPOINT_PAGES = 10_000;
/** How soon the worker looks again after the log has grown. */
const CHECKPOINT_CATCH_UP_MS = 2;
/** The longest the worker waits between looks, once the log has stopped growing. */
export const CHECKPOINT_INTERVAL_MS = 200;
const STOP_WAIT_MS = 5000;

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
  const workerData: CheckpointerData = { file, intervalMs: CHECKPOINT_INTERVAL_MS, catchUpMs: CHECKPOINT_CATCH_UP_MS, state: state.buffer };
  const worker = startWorker(import.meta.url, './checkpointer.worker', { workerData });
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
