// @hearth/sdk: every operation of Hearth's HTTP contract as a typed function, generated from the
// OpenAPI document (generated/openapi), plus a client bound to one server's base URL and key
// that retries, times out, keys its creating POSTs and throws typed errors; iterators over the
// paginated lists; and the check of the webhooks Hearth sends.
import { createClient, type Client } from '../../generated/openapi/client/index.js';
import { HearthApiError, HearthRequestError } from './errors.js';
import { resilientFetch, type RetryOptions } from './resilient-fetch.js';

export * from '../../generated/openapi/index.js';
export { client } from '../../generated/openapi/client.gen.js';
export { createClient, createConfig, type Auth, type Client, type Config, type RequestResult } from '../../generated/openapi/client/index.js';
export { HearthApiError, HearthRequestError } from './errors.js';
export { allClaims, allCollections, allEntities, allEvents, eventPages, paginate, type Page } from './paginate.js';
export { CREATING_POST_PATH, retryAfterMs, type RetryOptions } from './resilient-fetch.js';
export { HearthWebhookError, verifyWebhook, type WebhookHeaders } from './webhooks.js';

export interface HearthClientOptions {
  /** Where the server is, e.g. `https://hearth.example.org` (no trailing slash needed). */
  baseUrl: string;
  /** An API key, sent as `Authorization: Bearer <key>` to the operations that need one. */
  apiKey?: string;
  /** A fetch implementation other than the global one (tests, proxies). */
  fetch?: typeof globalThis.fetch;
  /**
   * Retries with exponential backoff and full jitter, waiting as long as Retry-After asks: a 429
   * (nothing was done), and a 503 or no answer at all (network failure, timeout) for requests
   * safe to repeat (GET, HEAD, OPTIONS, PUT, DELETE, and any carrying an Idempotency-Key).
   * Default 3 attempts; false for none.
   */
  retry?: RetryOptions | false;
  /** Each attempt's timeout in ms (default 30 000; 0 for none). A call's own `signal` still aborts it. */
  timeoutMs?: number;
  /** A random Idempotency-Key (UUID) on each creating POST the caller gives none, the same for every attempt of the call (default true). */
  idempotencyKeys?: boolean;
  /**
   * Makes every call throw on an error status (HearthApiError, from the problem details) or when
   * no answer came (HearthRequestError) instead of resolving to `{ error }`. A call may also pass
   * `throwOnError: true` itself (its result type then has no `error`).
   */
  throwOnError?: boolean;
  /** How to wait between attempts (default a timer); tests pass one that does not wait. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** A client for one Hearth server: pass it as `client` to each operation. */
export function createHearthClient(options: HearthClientOptions): Client {
  const send = resilientFetch({
    retry: options.retry,
    timeoutMs: options.timeoutMs,
    idempotencyKeys: options.idempotencyKeys,
    fetch: options.fetch,
    sleep: options.sleep,
  });
  const client = createClient({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    auth: options.apiKey,
    fetch: (input, init) => send(new Request(input, init)),
    throwOnError: options.throwOnError ?? false,
  });
  // Only errors that are thrown become classes: a call resolving to `{ error }` keeps the problem details its type states.
  client.interceptors.error.use((error, response, request, opts) => {
    if (!opts.throwOnError) return error;
    return response ? new HearthApiError(response, error) : new HearthRequestError(request, error);
  });
  return client;
}
