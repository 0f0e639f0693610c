// Starts a real Hearth on 127.0.0.1 (ephemeral port) for contract tests, with a client of the
// built partner package @hearth/sdk (make sdk) pointed at it: every contract test's requests go
// through the package's own client code, as a partner's would, with its retries, timeouts and
// automatic Idempotency-Keys on. Its retries give up on a Retry-After longer than 100 ms (every
// one Hearth sends), so tests of 429 and 503 see those answers.
import { createHearth, type Hearth } from '../../src/app.ts';
import { configWith, type Config } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { ApiKeyService, type Scope } from '../../src/platform/keys/service.ts';
import { createLogger, type Logger } from '../../src/platform/logging.ts';
import { listen } from '../../src/platform/server.ts';
import { createHearthClient, type Client } from '@hearth/sdk';

export interface TestServer {
  config: Config;
  hearth: Hearth;
  baseUrl: string;
  /** A @hearth/sdk client bound to this server. */
  client: Client;
  stop(): Promise<void>;
}

export async function startTestServer(db: Db, env: Record<string, string> = {}, opts: { logger?: Logger } = {}): Promise<TestServer> {
  // Suites send many requests from one key and address to one server: limits they never reach,
  // unless a test sets its own (test/platform/rate-limit.test.ts), as area B's helper does. No
  // webhook dispatcher polling the suite's database in the background, unless a test asks for one
  // (the webhook tests drive theirs, or run servers as processes).
  const config = configWith({
    DATA_DIR: './data/test',
    GRPC_PORT: '0',
    TWINS_RATE_LIMIT_PER_MINUTE: '100000',
    AGENT_RATE_LIMIT_PER_MINUTE: '100000',
    CHAIN_RATE_LIMIT_PER_MINUTE: '100000',
    WEBHOOK_POLL_MS: '0',
    ...env,
  });
  const hearth = await createHearth({ config, db, logger: opts.logger ?? createLogger(config) });
  const running = await listen(hearth.app, 0, '127.0.0.1', 1000);
  const baseUrl = `http://127.0.0.1:${running.port}`;
  return {
    config,
    hearth,
    baseUrl,
    client: createHearthClient({ baseUrl, retry: { maxAttempts: 3, baseDelayMs: 10, maxRetryAfterMs: 100 }, timeoutMs: 60_000 }),
    async stop() {
      await running.stop();
      await hearth.close();
    },
  };
}

/** Creates an API key directly in the database and returns the secret. */
export async function createTestKey(
  db: Db,
  opts: { principalDid?: string; scopes?: Scope[]; name?: string } = {},
): Promise<string> {
  const { key } = await new ApiKeyService(db).create({
    name: opts.name ?? 'test',
    principalDid: opts.principalDid ?? 'did:ixo:entity:00000000000000000000000000000001',
    scopes: opts.scopes,
  });
  return key;
}
