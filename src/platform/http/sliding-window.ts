// Sliding-window stores for express-rate-limit. Its own stores count in fixed windows, so a
// client can send the limit just before a window ends and again just after: twice the limit in
// a few seconds. These keep the times of the hits allowed in the last window (at most `limit`
// per key) and allow a hit only while fewer than `limit` lie within the window ending now.
// Refused hits are not recorded: a client that keeps trying is let in again as its old hits
// age out, not held off for ever.
import { randomUUID } from 'node:crypto';
import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';

/** One process: per key, the times of its allowed hits in the window, oldest first. */
export class SlidingWindowMemoryStore implements Store {
  readonly localKeys = true;
  private windowMs = 60_000;
  private limit = 1;
  private readonly hits = new Map<string, number[]>();
  private sweeper?: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
    this.limit = typeof options.limit === 'number' ? options.limit : 1;
    // Keys idle for a whole window are dropped, so memory follows the active clients.
    this.sweeper = setInterval(() => this.sweep(), this.windowMs);
    this.sweeper.unref();
  }

  private inWindow(key: string, now: number): number[] {
    const times = this.hits.get(key) ?? [];
    const start = now - this.windowMs;
    let drop = 0;
    while (drop < times.length && times[drop]! <= start) drop++;
    if (drop) times.splice(0, drop);
    return times;
  }

  increment(key: string): ClientRateLimitInfo {
    const now = this.now();
    const times = this.inWindow(key, now);
    const allowed = times.length < this.limit;
    if (allowed) times.push(now);
    if (times.length) this.hits.set(key, times);
    return { totalHits: allowed ? times.length : times.length + 1, resetTime: new Date((times[0] ?? now) + this.windowMs) };
  }

  decrement(key: string): void {
    this.hits.get(key)?.pop();
  }

  resetKey(key: string): void {
    this.hits.delete(key);
  }

  resetAll(): void {
    this.hits.clear();
  }

  shutdown(): void {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const now = this.now();
    for (const key of [...this.hits.keys()]) if (!this.inWindow(key, now).length) this.hits.delete(key);
  }
}

// One atomic step in Redis, on Redis' own clock (instances' clocks may differ): drop the hits
// that left the window, allow this one if fewer than the limit remain, and report the count
// and the oldest hit (when the next place frees up). A sorted set per key, scored by time in
// microseconds; members are unique per hit.
const SLIDING_WINDOW_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1]) * 1000
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, now .. '-' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  count = count + 1
else
  count = count + 1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local first = now
if oldest[2] then first = tonumber(oldest[2]) end
return { count, math.floor((first + window) / 1000) }
`;

type SendCommand = (args: string[]) => Promise<unknown>;

/** Shared by every instance through Redis. */
export class SlidingWindowRedisStore implements Store {
  readonly localKeys = false;
  private windowMs = 60_000;
  private limit = 1;

  constructor(
    private readonly sendCommand: SendCommand,
    readonly prefix: string,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
    this.limit = typeof options.limit === 'number' ? options.limit : 1;
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const unique = randomUUID();
    const [count, resetMs] = (await this.sendCommand(['EVAL', SLIDING_WINDOW_SCRIPT, '1', this.prefix + key, String(this.windowMs), String(this.limit), unique])) as [number, number];
    return { totalHits: Number(count), resetTime: new Date(Number(resetMs)) };
  }

  async decrement(key: string): Promise<void> {
    await this.sendCommand(['ZPOPMAX', this.prefix + key]);
  }

  async resetKey(key: string): Promise<void> {
    await this.sendCommand(['DEL', this.prefix + key]);
  }
}
