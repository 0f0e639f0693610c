// GET /health and GET / (spec B5). `database` comes from a real query with a timeout.
import type { Router } from 'express';
import type { Health, RootStatus } from '../../generated/openapi/types.gen.ts';
import { pingDb, type Db } from './db/index.ts';
import { caseSensitiveRouter } from './http/scope.ts';

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

export function healthRouter(db: Db, opts: HealthOptions): Router {
  const router = caseSensitiveRouter();
  router.get('/health', async (_req, res) => {
    const report = await healthReport(db, opts);
    res.status(report.database === 'connected' ? 200 : 503).set('Cache-Control', 'no-store').json(report);
  });
  router.get('/', (_req, res) => {
    res.set('Cache-Control', 'no-store').json(rootStatus(opts));
  });
  return router;
}
