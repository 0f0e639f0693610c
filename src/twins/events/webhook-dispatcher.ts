// Sends webhook deliveries, in the server process: every WEBHOOK_POLL_MS it fans new events out
// into deliveries and sends those due, each leased to this instance (several instances share the
// work through the database). At least once: a delivery is marked sent only after a 2xx, so one
// whose instance crashed mid-request is sent again when its lease expires.
import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import type { Db } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/logging.ts';
import { NetworkGuard } from './network-guard.ts';
import { WebhookRepository, type AttemptOutcome, type LeasedDelivery } from './webhooks.repository.ts';

export interface DispatcherOptions {
  pollMs: number;
  timeoutMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  maxAttempts: number;
  maxConsecutiveFailures: number;
  guard: NetworkGuard;
  logger: Logger;
  /** The clock deliveries are scheduled by; tests move it. */
  now?: () => Date;
}

const FAN_OUT_BATCH = 200;
const SEND_BATCH = 20;
const USER_AGENT = 'Hearth-Webhooks/1';

/** The delay before attempt `attempts + 1` after `attempts` failed: base · 2^(attempts − 1), at most max. */
export function retryDelayMs(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempts - 1, 40));
}

export class WebhookDispatcher {
  private readonly repo: WebhookRepository;
  private readonly now: () => Date;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Aborts requests in flight when the dispatcher stops. */
  private readonly abort = new AbortController();

  constructor(db: Db, private readonly opts: DispatcherOptions) {
    this.repo = new WebhookRepository(db);
    this.now = opts.now ?? (() => new Date());
  }

  /** Polls every pollMs until stop() (pollMs 0: never). */
  start(): void {
    if (!this.opts.pollMs || this.stopped) return;
    const tick = () => {
      this.running = this.runOnce()
        .then(() => undefined, (err: unknown) => this.opts.logger.warn({ err }, 'webhook dispatch failed; trying again at the next poll'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.opts.pollMs).unref();
        });
    };
    // Unref'd: polling alone keeps no process alive (the server's listener does).
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort.abort();
    await this.running;
  }

  /** One round: fans every new event out, then sends the deliveries due now. The deliveries attempted. */
  async runOnce(): Promise<number> {
    let fanned = FAN_OUT_BATCH;
    while (fanned === FAN_OUT_BATCH && !this.stopped) fanned = await this.repo.fanOut(FAN_OUT_BATCH, this.now().toISOString());
    let attempted = 0;
    for (;;) {
      const now = this.now();
      const lease = new Date(now.getTime() + this.opts.timeoutMs + 2000).toISOString();
      const leased = await this.repo.leaseDue(now.toISOString(), lease, SEND_BATCH);
      if (!leased.length || this.stopped) return attempted;
      await Promise.all(leased.map((d) => this.deliver(d)));
      attempted += leased.length;
    }
  }

  private async deliver(d: LeasedDelivery): Promise<void> {
    const outcome = await this.send(d);
    // Cut short by a shutdown: not an attempt of the receiver's; the lease expires and it is sent again.
    if (this.stopped) return;
    const at = this.now();
    const attempts = d.attempts + 1;
    const retryAt = outcome.ok || attempts >= this.opts.maxAttempts ? undefined : new Date(at.getTime() + retryDelayMs(attempts, this.opts.retryBaseMs, this.opts.retryMaxMs)).toISOString();
    if (!outcome.ok) this.opts.logger.info({ delivery: d.id, subscription: d.subscription.id, status: outcome.responseStatus, error: outcome.error, retryAt }, 'webhook delivery failed');
    await this.repo.recordAttempt(d, outcome, at.toISOString(), retryAt, this.opts.maxConsecutiveFailures);
  }

  /** One signed POST (Standard Webhooks); ok on a 2xx within timeoutMs. */
  private send(d: LeasedDelivery): Promise<AttemptOutcome> {
    const body = JSON.stringify(d.event);
    const sentAt = new Date();
    const signature = new Webhook(d.subscription.secret).sign(d.event.id, sentAt, body);
    let url: URL;
    try {
      url = new URL(d.subscription.url);
    } catch {
      return Promise.resolve({ ok: false, error: 'the URL does not parse' });
    }
    const literal = NetworkGuard.literalOf(url);
    // An address in the URL is connected to without a lookup: checked here instead.
    if (literal && !this.opts.guard.permits(literal)) return Promise.resolve({ ok: false, error: `${literal} is not a public address` });
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<AttemptOutcome>((resolve) => {
      const req = client.request(url, {
        method: 'POST',
        agent: false,
        lookup: this.opts.guard.lookup as never,
        signal: this.abort.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': d.event.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signature,
        },
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
      req.on('response', (res) => {
        clearTimeout(timer);
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(status >= 200 && status < 300 ? { ok: true, responseStatus: status } : { ok: false, responseStatus: status, error: `answered HTTP ${status}` });
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        resolve({ ok: false, error: err.message });
      });
      req.end(body);
    });
  }
}
