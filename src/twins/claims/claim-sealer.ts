// Sealing a claim (RFC 8785, SHA-256, Ed25519, base58) was about a fifth of a submission's CPU on
// the request thread. It runs on a thread of its own, so the request thread keeps to HTTP and
// SQL; so does signing the credentials of claims verified later (a claim completing 2,000
// pending claims held the request thread for up to a second). The thread starts with the first
// seal; until it has loaded (a few hundred ms), after close, or if it fails, claims are sealed on
// the request thread: the same bytes either way.
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../platform/worker.ts';
import { sealClaim, sealCredential, type ClaimSeal, type CredentialInput, type SealedCredential, type SealInput } from './claim-seal.ts';
import type { ValidatorKey } from '../credentials/validator-key.ts';

type Request = { input: SealInput } | { credential: CredentialInput };
/** The requests of one message to the thread, each numbered. */
export type Batch = ({ n: number } & Request)[];
/**
 * How many seals the thread answers in one message: a batch is answered in parts, so the request
 * thread goes on with a batch's first claims while the thread seals the rest, instead of waiting
 * idle for the whole batch (it did about a tenth of the time under load).
 */
export const REPLY_SIZE = 4;
/** The thread's answers to part of a batch, in its order. */
export type Reply = { ready: true } | ({ n: number; result: unknown } | { n: number; error: string })[];

interface Waiting {
  resolve(result: unknown): void;
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
  /** The requests of this turn of the event loop, sent to the thread together after its I/O. */
  private outbox: Batch = [];

  constructor(
    private readonly validatorKey: () => Promise<ValidatorKey>,
    /** Told once when the thread fails; sealing goes on, on the request thread. */
    private readonly onThreadFailure: (err: Error) => void,
  ) {}

  /** Whether seals currently run on the sealer thread. */
  get onThread(): boolean {
    return this.threaded;
  }

  seal(input: SealInput): Promise<ClaimSeal> {
    return this.run({ input }, (key) => sealClaim(input, key));
  }

  /** The credential of a claim verified after it was sealed. */
  sealCredential(credential: CredentialInput): Promise<SealedCredential> {
    return this.run({ credential }, (key) => sealCredential(credential, key));
  }

  private async run<T>(request: Request, inPlace: (key: ValidatorKey) => T): Promise<T> {
    const key = await this.validatorKey();
    if (!this.threaded) {
      void this.start(key).catch(() => {});
      return inPlace(key);
    }
    try {
      return (await this.onWorker(request)) as T;
    } catch {
      // The thread failed, closed or could not seal this input: sealing here gives the result
      // (or the error) the caller is owed.
      return inPlace(key);
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
        for (const answer of reply) {
          const waiting = this.waiting.get(answer.n);
          this.waiting.delete(answer.n);
          if ('result' in answer) waiting?.resolve(answer.result);
          else waiting?.reject(new Error(answer.error));
        }
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

  /**
   * Queued, and sent with the other requests of this turn after its I/O: under load one message
   * carries the seals of every request read together, and one answers them (a message each
   * would cost the request thread a visible share of its time).
   */
  private onWorker(request: Request): Promise<unknown> {
    const n = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(n, { resolve, reject });
      if (this.outbox.push({ n, ...request }) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.outbox;
    this.outbox = [];
    // Closed or failed since: failWaiting has rejected the batch's callers, who seal in place.
    if (!this.threaded) return;
    try {
      this.worker!.postMessage(batch);
    } catch (err) {
      // A request that cannot be sent (not cloneable): its batch is sealed in place.
      for (const { n } of batch) {
        this.waiting.get(n)?.reject(err as Error);
        this.waiting.delete(n);
      }
    }
  }

  private failWaiting(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
