// Prometheus metrics (prom-client), served at GET /metrics. The platform counts every request
// by operation template and status, times it, and reports the database pool; each area
// registers its own metrics on the same registry (AreaContext.metrics). Labels hold only
// templates, methods and statuses, never ids, so their number stays bounded.
import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { poolStats, type Db } from './db/index.ts';
import { unauthorized } from './http/errors.ts';
import { SENT, type Handler } from './http/handlers.ts';

/** The operation a request was resolved to, as the contract writes it, else its area's catch-all. */
export type RouteLabeller = (req: Request) => string;

export function createMetrics(db: Db): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hearth_' });
  new Gauge({
    name: 'hearth_db_pool_connections',
    help: 'Database pool connections by state (used, free, pending acquires).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const { used, free, pending } = poolStats(db);
      this.set({ state: 'used' }, used);
      this.set({ state: 'free' }, free);
      this.set({ state: 'pending' }, pending);
    },
  });
  new Counter({
    name: 'hearth_db_round_trips_total',
    help: 'Statements sent to the database, each one exchange with it.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(poolStats(db).roundTrips);
    },
  });
  return registry;
}

/** What a database gauge reads at a scrape: one value per label set (none for an unlabelled gauge). */
export type GaugeSamples<L extends string> = { labels?: Record<L, string>; value: number }[];

/** Per registry, the reads of its database gauges: /metrics runs them all before it renders. */
const databaseReads = new WeakMap<Registry, (() => Promise<void>)[]>();

/**
 * A gauge read from the database at each scrape. When the database does not answer, the scrape
 * still answers every other metric (those of the pool and the requests matter most then): the
 * gauge keeps its last values and hearth_metric_read_failures_total{metric} counts the miss.
 */
export function databaseGauge<L extends string>(
  registry: Registry,
  opts: { name: string; help: string; labelNames?: readonly L[]; read: () => Promise<GaugeSamples<L>> },
): void {
  let reads = databaseReads.get(registry);
  if (!reads) databaseReads.set(registry, (reads = []));
  const failures =
    (registry.getSingleMetric('hearth_metric_read_failures_total') as Counter<'metric'> | undefined) ??
    new Counter({ name: 'hearth_metric_read_failures_total', help: 'Scrapes at which a gauge read from the database could not be read (it kept its last values).', labelNames: ['metric'], registers: [registry] });
  const gauge = new Gauge({ name: opts.name, help: opts.help, labelNames: opts.labelNames ?? [], registers: [registry] });
  reads.push(async () => {
    let samples: GaugeSamples<L>;
    try {
      samples = await opts.read();
    } catch {
      failures.inc({ metric: opts.name });
      return;
    }
    gauge.reset();
    for (const { labels, value } of samples) {
      if (labels) gauge.set(labels, value);
      else gauge.set(value);
    }
  });
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  buckets: number[];
}

/**
 * Counts and times every request once its answer is sent (or the client is gone), as
 * hearth_http_requests_total and the hearth_http_request_duration_seconds histogram. Each request
 * only adds to plain numbers in a map; the Prometheus lines are built when /metrics is scraped:
 * prom-client's own Counter.inc and Histogram.observe per request cost a simple route a large
 * share of its throughput under make bench.
 */
export function httpMetrics(registry: Registry, routeOf: RouteLabeller): RequestHandler {
  const series = new Map<string, Series>();
  const record = (method: string, route: string, status: string, seconds: number) => {
    const key = `${method} ${route} ${status}`;
    let s = series.get(key);
    if (!s) series.set(key, (s = { labels: { method, route, status }, count: 0, sum: 0, buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0) }));
    s.count += 1;
    s.sum += seconds;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    s.buckets[i]! += 1;
  };
  const snapshot = (name: string, help: string, type: 'counter' | 'histogram', values: () => { labels: Record<string, string | number>; value: number; metricName?: string }[]) => ({
    name,
    help,
    type,
    aggregator: 'sum',
    get: () => ({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => series.clear(),
  });
  registry.registerMetric(
    snapshot('hearth_http_requests_total', 'HTTP requests by operation and status.', 'counter', () =>
      [...series.values()].map((s) => ({ labels: s.labels, value: s.count })),
    ) as unknown as Parameters<Registry['registerMetric']>[0],
  );
  registry.registerMetric(
    snapshot('hearth_http_request_duration_seconds', 'Time to answer HTTP requests, by operation and status.', 'histogram', () =>
      [...series.values()].flatMap((s) => {
        let cumulative = 0;
        const metricName = 'hearth_http_request_duration_seconds';
        return [
          ...s.buckets.map((n, i) => {
            cumulative += n;
            return { metricName: `${metricName}_bucket`, labels: { le: i < DURATION_BUCKETS.length ? DURATION_BUCKETS[i]! : '+Inf', ...s.labels }, value: cumulative };
          }),
          { metricName: `${metricName}_sum`, labels: s.labels, value: s.sum },
          { metricName: `${metricName}_count`, labels: s.labels, value: s.count },
        ];
      }),
    ) as unknown as Parameters<Registry['registerMetric']>[0],
  );
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('close', () => record(req.method, routeOf(req), String(res.statusCode), Number(process.hrtime.bigint() - started) / 1e9));
    next();
  };
}

/** GET /metrics in the Prometheus text format; with a token, only for `Authorization: Bearer <token>`. */
export function metricsHandler(registry: Registry, token: string | undefined): Handler<'getMetrics'> {
  const expected = token ? Buffer.from(`Bearer ${token}`) : undefined;
  return async ({ req, res }) => {
    if (expected) {
      const given = Buffer.from(req.headers.authorization ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    }
    // The database gauges first, all at once: the failures they count are in this scrape.
    await Promise.all((databaseReads.get(registry) ?? []).map((read) => read()));
    res.setHeader('Cache-Control', 'no-store');
    res.type('text/plain').send(await registry.metrics());
    return SENT;
  };
}
