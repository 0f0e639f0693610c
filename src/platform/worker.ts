// Worker threads on modules of their own. From dist/ a worker is the compiled .js beside its
// caller; from source (tsx) it is the .ts, loaded through ts-worker.mjs.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker module `name` (relative, without extension) beside `callerUrl`, the caller's
 * `import.meta.url`, with the caller's own extension.
 */
export function startWorker(callerUrl: string, name: string, options: WorkerOptions): Worker {
  const ext = extname(fileURLToPath(callerUrl));
  const entry = new URL(`${name}${ext}`, callerUrl);
  if (ext !== '.ts') return new Worker(entry, options);
  return new Worker(new URL('./ts-worker.mjs', import.meta.url), { ...options, argv: [entry.href] });
}
