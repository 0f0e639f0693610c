// Sealing a claim (RFC 8785, SHA-256, Ed25519, base58) was about a fifth of a submission's CPU on
// the request thread. It runs on a thread of its own, so the request thread keeps to HTTP and
// SQL. The thread starts with the first seal; until it has loaded (a few hundred ms), after
// close, or if it fails, claims are sealed on the request thread: the same bytes either way.
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../platform/worker.ts';
import { sealClaim, type ClaimSeal, type SealInput } from './claim-seal.ts';
import type { ValidatorKey } from './validator-key.ts';

type Reply = { ready: true } | { n: number; seal: ClaimSeal } | { n: number; error: string };

interface Waiting {
  resolve(seal: ClaimSeal): void;
  reject(err: Error): void;
}

export class ClaimSealer {
  private worker?: Worker;
  private ready?: Promise<void>;
  /** True once the thread has loaded, until it fails or the sealer closes. */
  private threaded = false;
  private closed = false;
  private next = 0;
  private readonly waiting = new Map<number, Waiting>();

  constructor(
    private readonly validatorKey: () => Promise<ValidatorKey>,
    /** Told once when the thread fails; sealing goes on, on the request thread. */
    private readonly onThreadFailure: (err: Error) => void,
  ) {}

  /** Whether seals currently run on the sealer thread. */
  get onThread(): boolean {
    return this.threaded;
  }

  async seal(input: SealInput): Promise<ClaimSeal> {
    const key = await this.validatorKey();
    if (!this.threaded) {
      void this.start(key).catch(() => {});
      return sealClaim(input, key);
    }
    try {
      return await this.onWorker(input);
    } catch {
      // The thread failed, closed or could not seal this input: sealing here gives the result
      // (or the error) the caller is owed.
      return sealClaim(input, key);
    }
  }

  /** Starts the thread (once); resolves when it can seal, rejects when it cannot start. */
  async whenReady(): Promise<void> {
    return this.start(await this.validatorKey());
  }

  async close(): Promise<void> {
    this.closed = true;
    this.threaded = false;
    this.failWaiting(new Error('the claim sealer is closed'));
    await this.worker?.terminate();
  }

  private start(key: ValidatorKey): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the claim sealer is closed'));
    this.ready ??= new Promise<void>((resolve, reject) => {
      const worker = startWorker(import.meta.url, './claim-sealer.worker', { workerData: { key } });
      this.worker = worker;
      // Never what keeps a process alive.
      worker.unref();
      worker.on('message', (reply: Reply) => {
        if ('ready' in reply) {
          this.threaded = !this.closed;
          resolve();
          return;
        }
        const waiting = this.waiting.get(reply.n);
        this.waiting.delete(reply.n);
        if ('seal' in reply) waiting?.resolve(reply.seal);
        else waiting?.reject(new Error(reply.error));
      });
      let failed = false;
      const fail = (err: Error) => {
        if (failed) return;
        failed = true;
        this.threaded = false;
        this.failWaiting(err);
        reject(err);
        if (!this.closed) this.onThreadFailure(err);
      };
      worker.once('error', fail);
      worker.once('exit', (code) => fail(new Error(`the claim sealer thread exited with code ${code}`)));
    });
    return this.ready;
  }

  private onWorker(input: SealInput): Promise<ClaimSeal> {
    const n = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(n, { resolve, reject });
      this.worker!.postMessage({ n, input });
    });
  }

  private failWaiting(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
