// Prometheus metrics (prom-client), served at GET /metrics. The platform counts every request
// by operation template and status, times it, and reports the database pool; each area
// registers its own metrics on the same registry (AreaContext.metrics). Labels hold only
// templates, methods and statuses, never ids, so their number stays bounded.
import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Router } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from './db/index.ts';
import { unauthorized } from './http/errors.ts';
import { caseSensitiveRouter } from './http/scope.ts';

/** The operation a request was resolved to, as the contract writes it, else its area's catch-all. */
export type RouteLabeller = (req: Request) => string;

export function createMetrics(db: Db): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hearth_' });
  const pool = () => (db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool;
  new Gauge({
    name: 'hearth_db_pool_connections',
    help: 'Database pool connections by state (used, free, pending acquires).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const p = pool();
      this.set({ state: 'used' }, p?.numUsed() ?? 0);
      this.set({ state: 'free' }, p?.numFree() ?? 0);
      this.set({ state: 'pending' }, p?.numPendingAcquires() ?? 0);
    },
  });
  return registry;
}

/** Counts and times every request once its answer is sent (or the client is gone). */
export function httpMetrics(registry: Registry, routeOf: RouteLabeller): RequestHandler {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'hearth_http_requests_total', help: 'HTTP requests by operation and status.', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'hearth_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by operation and status.',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const labels = { method: req.method, route: routeOf(req), status: String(res.statusCode) };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

/** GET /metrics in the Prometheus text format; with a token, only for `Authorization: Bearer <token>`. */
export function metricsRouter(registry: Registry, token: string | undefined): Router {
  const router = caseSensitiveRouter();
  const expected = token ? Buffer.from(`Bearer ${token}`) : undefined;
  router.get('/metrics', async (req, res) => {
    if (expected) {
      const given = Buffer.from(req.headers.authorization ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    }
    res.setHeader('Cache-Control', 'no-store');
    res.type('text/plain').send(await registry.metrics());
  });
  return router;
}
