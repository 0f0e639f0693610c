// A benchmark target in its own process (so the load generator does not share its event loop):
//   tsx test/bench/server.ts baseline  -> a bare Express 5 handler
//   tsx test/bench/server.ts hearth    -> Hearth on a fresh SQLite file (or BENCH_DATABASE_URL);
//                                         BENCH_LOG_LEVEL (default silent; warn or error, as the
//                                         harness reads the first line of stdout) shows its log
// Prints one JSON line {port, key, grpcPort} once it listens. Hearth runs as `make start` runs
// it: the compiled code in dist/ (`make bench` builds it first), not the sources under tsx.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';

const mode = process.argv[2];
const built = new URL('../../dist/src/', import.meta.url);

if (!existsSync(new URL('app.js', built))) throw new Error('dist/ has no build of Hearth: run `make build` (make bench does)');

/** A module of the compiled build, typed as its source. */
const compiled = async <M>(module: string): Promise<M> => (await import(new URL(`${module}.js`, built).href)) as M;
const { listen } = await compiled<typeof import('../../src/platform/server.ts')>('platform/server');

if (mode === 'baseline') {
  const app = express();
  app.get('/baseline', (_req, res) => {
    res.json({ status: 'ok', timestamp: new Date().toISOString() });
  });
  const running = await listen(app, 0, '127.0.0.1', 1000);
  console.log(JSON.stringify({ port: running.port }));
} else if (mode === 'hearth') {
  const { createHearth } = await compiled<typeof import('../../src/app.ts')>('app');
  const { loadConfig } = await compiled<typeof import('../../src/config.ts')>('config');
  const { createDb } = await compiled<typeof import('../../src/platform/db/index.ts')>('platform/db/index');
  const { migrateLatest } = await compiled<typeof import('../../src/platform/db/migrate.ts')>('platform/db/migrate');
  const { ApiKeyService, SCOPES } = await compiled<typeof import('../../src/platform/keys/service.ts')>('platform/keys/service');
  const { createLogger } = await compiled<typeof import('../../src/platform/logging.ts')>('platform/logging');
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bench-'));
  // The harness ends a target with SIGTERM; its database goes with it.
  process.once('SIGTERM', () => {
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    DATA_DIR: dataDir,
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
    GRPC_PORT: '0',
    USSD_DEBUG_ENABLED: 'true',
    PIN_ENCRYPTION_KEY: '00'.repeat(32),
    // The bench sends thousands of requests a second from one key and address: limits it never reaches.
    USSD_RATE_LIMIT_PER_MINUTE: '100000000',
    TWINS_RATE_LIMIT_PER_MINUTE: '100000000',
    AGENT_RATE_LIMIT_PER_MINUTE: '100000000',
    CHAIN_RATE_LIMIT_PER_MINUTE: '100000000',
  });
  const db = createDb({ url: config.DATABASE_URL, dataDir, poolMax: config.DB_POOL_MAX });
  await migrateLatest(db);
  const { key } = await new ApiKeyService(db).create({
    name: 'bench',
    principalDid: 'did:ixo:entity:0000000000000000000000000000bench',
    scopes: [...SCOPES],
  });
  const hearth = await createHearth({ config, db, logger: createLogger(config) });
  const running = await listen(hearth.app, 0, '127.0.0.1', 1000);
  console.log(JSON.stringify({ port: running.port, key, grpcPort: hearth.app.locals.chainGrpcPort }));
} else {
  console.error('usage: server.ts baseline|hearth');
  process.exit(2);
}
