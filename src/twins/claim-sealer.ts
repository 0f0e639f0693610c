// Sealing a claim (RFC 8785, SHA-256, Ed25519, base58) was about a fifth of a submission's CPU on
// the request thread. It runs on a thread of its own, so the request thread keeps to HTTP and
// SQL; so does signing the credentials of claims verified later (a claim completing 2,000
// pending claims held the request thread for up to a second). The thread starts with the first
// seal; until it has loaded (a few hundred ms), after close, or if it fails, claims are sealed on
// the request thread: the same bytes either way.
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../platform/worker.ts';
import { sealClaim, sealCredential, type ClaimSeal, type CredentialInput, type SealedCredential, type SealInput } from './claim-seal.ts';
import type { ValidatorKey } from './validator-key.ts';

type Request = { input: SealInput } | { credential: CredentialInput };
type Reply = { ready: true } | { n: number; result: unknown } | { n: number; error: string };

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
        const waiting = this.waiting.get(reply.n);
        this.waiting.delete(reply.n);
        if ('result' in reply) waiting?.resolve(reply.result);
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

  private onWorker(request: Request): Promise<unknown> {
    const n = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(n, { resolve, reject });
      this.worker!.postMessage({ n, ...request });
    });
  }

  private failWaiting(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
