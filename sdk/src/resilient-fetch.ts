// The fetch under a Hearth client: a timeout per attempt, an Idempotency-Key on creating POSTs
// that have none (the same on every attempt, so a retry never creates twice), and retries with
// exponential backoff and full jitter, honouring Retry-After.

export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 turns retries off). */
  maxAttempts?: number;
  /** The first backoff's ceiling in ms (default 250); it doubles with each retry. */
  baseDelayMs?: number;
  /** The ceiling of a backoff in ms (default 10 000). */
  maxDelayMs?: number;
  /** A Retry-After longer than this (ms, default 60 000) is not waited for: its answer is returned. */
  maxRetryAfterMs?: number;
}

export interface ResilienceOptions {
  /** Retries of 429 (any request), 503 and failures without an answer (safe requests only, below); false for none. */
  retry?: RetryOptions | false;
  /** Each attempt's timeout in ms (default 30 000; 0 for none). */
  timeoutMs?: number;
  /** Sends a random Idempotency-Key with each creating POST that has none (default true). */
  idempotencyKeys?: boolean;
  /** The fetch to call (default the global one). */
  fetch?: typeof globalThis.fetch;
  /** How to wait between attempts (tests pass one that records the delay). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * The creating POSTs, which take an Idempotency-Key: /v1/entities, /v1/claims, /v1/collections
 * and /v1/collections/{id}/draws (at the end of the URL's path, after any base path).
 */
export const CREATING_POST_PATH = /\/v1\/(?:entities|claims|collections|collections\/[^/]+\/draws|webhooks)$/;

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** A request that may be sent again without doing twice what it does: an idempotent method, or one carrying an Idempotency-Key. */
const isSafeToRepeat = (request: Request) => IDEMPOTENT_METHODS.has(request.method) || request.headers.has('Idempotency-Key');

/** Retry-After in ms (delay-seconds or an HTTP date, RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** A fetch taking the client's Request and applying the options; its failures without an answer are thrown as fetch's are. */
export function resilientFetch(options: ResilienceOptions = {}): (request: Request) => Promise<Response> {
  const retry = options.retry === false ? { maxAttempts: 1 } : (options.retry ?? {});
  const maxAttempts = Math.max(1, retry.maxAttempts ?? 3);
  const baseDelayMs = retry.baseDelayMs ?? 250;
  const maxDelayMs = retry.maxDelayMs ?? 10_000;
  const maxRetryAfterMs = retry.maxRetryAfterMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const sleep = options.sleep ?? defaultSleep;
  const send = options.fetch ?? ((input: Request) => globalThis.fetch(input));
  // Full jitter: a random wait up to the doubled ceiling, so clients that failed together spread out.
  const backoff = (retryNumber: number) => Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** retryNumber);

  return async (input: Request) => {
    let request = input;
    if (options.idempotencyKeys !== false && request.method === 'POST' && !request.headers.has('Idempotency-Key') && CREATING_POST_PATH.test(new URL(request.url).pathname)) {
      const headers = new Headers(request.headers);
      headers.set('Idempotency-Key', crypto.randomUUID());
      request = new Request(request, { headers });
    }
    const safe = isSafeToRepeat(request);
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= maxAttempts;
      // Each attempt sends a copy: a body is read once.
      const copy = last ? request : request.clone();
      const signal = timeoutMs > 0 ? AbortSignal.any([request.signal, AbortSignal.timeout(timeoutMs)]) : request.signal;
      let response: Response;
      try {
        response = await send(new Request(copy, { signal }));
      } catch (err) {
        // The caller's own abort ends it; a timeout or a network failure is retried when safe.
        if (last || request.signal.aborted || !safe) throw err;
        await sleep(backoff(attempt - 1), request.signal);
        continue;
      }
      const retryable = response.status === 429 || (response.status === 503 && safe);
      if (last || !retryable) return response;
      const asked = retryAfterMs(response.headers.get('Retry-After'));
      if (asked !== undefined && asked > maxRetryAfterMs) return response;
      // The answer is dropped for the next attempt's: its body is not left unread.
      await response.body?.cancel();
      await sleep(asked ?? backoff(attempt - 1), request.signal);
    }
  };
}
