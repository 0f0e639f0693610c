// @hearth/sdk: every operation of Hearth's HTTP contract as a typed function, generated from the
// OpenAPI document (generated/openapi), plus a client bound to one server's base URL and key.
import { createClient, type Client } from '../../generated/openapi/client/index.js';

export * from '../../generated/openapi/index.js';
export { client } from '../../generated/openapi/client.gen.js';
export { createClient, createConfig, type Auth, type Client, type Config, type RequestResult } from '../../generated/openapi/client/index.js';

export interface HearthClientOptions {
  /** Where the server is, e.g. `https://hearth.example.org` (no trailing slash needed). */
  baseUrl: string;
  /** An API key, sent as `Authorization: Bearer <key>` to the operations that need one. */
  apiKey?: string;
  /** A fetch implementation other than the global one (tests, proxies). */
  fetch?: typeof globalThis.fetch;
}

/** A client for one Hearth server: pass it as `client` to each operation. */
export function createHearthClient(options: HearthClientOptions): Client {
  return createClient({ baseUrl: options.baseUrl.replace(/\/+$/, ''), auth: options.apiKey, fetch: options.fetch });
}
