// GET /health and GET / (spec B5). `database` comes from a real query with a timeout.
import type { Router } from 'express';
import type { Health, RootStatus } from '../../generated/openapi/types.gen.ts';
import type { Config } from '../config.ts';
import { pingDb, type Db } from './db/index.ts';
import { caseSensitiveRouter } from './http/scope.ts';

const startedAt = Date.now();

export async function healthReport(db: Db, config: Config): Promise<Health> {
  const connected = await pingDb(db, config.DB_HEALTH_TIMEOUT_MS);
  return {
    status: connected ? 'ok' : 'degraded',
    environment: config.NODE_ENV,
    timestamp: new Date().toISOString(),
    uptime: Math.floor((Date.now() - startedAt) / 1000),
    database: connected ? 'connected' : 'disconnected',
  };
}

export function rootStatus(config: Config): RootStatus {
  return {
    status: 'ok',
    message: `${config.USSD_APP_NAME} server is running`,
    environment: config.NODE_ENV,
    timestamp: new Date().toISOString(),
  };
}

export function healthRouter(db: Db, config: Config): Router {
  const router = caseSensitiveRouter();
  router.get('/health', async (_req, res) => {
    const report = await healthReport(db, config);
    res.status(report.database === 'connected' ? 200 : 503).set('Cache-Control', 'no-store').json(report);
  });
  router.get('/', (_req, res) => {
    res.set('Cache-Control', 'no-store').json(rootStatus(config));
  });
  return router;
}
