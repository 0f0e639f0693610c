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

const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

// Plain CommonJS for the worker (it runs outside tsx's loader).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
const checkpoint = () => { try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} };
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => { clearInterval(timer); checkpoint(); db.close(); process.exit(0); });
`;

export interface Checkpointer {
  /** Ends the worker after a last checkpoint (does not wait for it). */
  stop(): void;
}

export function startCheckpointer(file: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, intervalMs, driver: DRIVER } });
  // Never what keeps a process alive, and a worker that fails leaves the foreground bound in charge.
  worker.unref();
  worker.on('error', () => undefined);
  return { stop: () => worker.postMessage('stop') };
}
