// GET /health and GET / (spec B5). `database` comes from a real query with a timeout.
import type { Health, RootStatus } from '../../generated/openapi/types.gen.ts';
import { pingDb, type Db } from './db/index.ts';
import type { Handlers } from './http/handlers.ts';

const startedAt = Date.now();

export interface HealthOptions {
  /** The name GET / says is running. */
  appName: string;
  environment: string;
  /** How long the database may take to answer the health query. */
  timeoutMs: number;
}

async function healthReport(db: Db, opts: HealthOptions): Promise<Health> {
  const connected = await pingDb(db, opts.timeoutMs);
  return {
    status: connected ? 'ok' : 'degraded',
    environment: opts.environment,
    timestamp: new Date().toISOString(),
    uptime: Math.floor((Date.now() - startedAt) / 1000),
    database: connected ? 'connected' : 'disconnected',
  };
}

function rootStatus(opts: HealthOptions): RootStatus {
  return {
    status: 'ok',
    message: `${opts.appName} server is running`,
    environment: opts.environment,
    timestamp: new Date().toISOString(),
  };
}

export function healthHandlers(db: Db, opts: HealthOptions) {
  return {
    getHealth: async () => {
      const report = await healthReport(db, opts);
      const headers = { 'Cache-Control': 'no-store' };
      return report.database === 'connected' ? { status: 200, body: report, headers } : { status: 503, body: report, headers };
    },
    getRoot: () => ({ status: 200, body: rootStatus(opts), headers: { 'Cache-Control': 'no-store' } }),
  } satisfies Handlers<'getHealth' | 'getRoot'>;
}
