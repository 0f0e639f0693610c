// PostgreSQL frozen (a proxy holding every byte, as SIGSTOP would) or down (connections cut and
// refused): every area answers within its deadline, in its own shape, with Retry-After where it
// is a 503, and serves again once the database is back, without a restart (issue #16, 2 and 3).
import express from 'express';
import request from 'supertest';
import { expect } from 'chai';
import FakeTimers from '@sinonjs/fake-timers';
import { pino } from 'pino';
import { requestDeadline } from '../../src/platform/http/deadline.ts';
import { errorHandler } from '../../src/platform/http/errors.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { createDb, isDatabaseUnavailable, rowsOf } from '../../src/platform/db/index.ts';
import { BrokenCircuitError } from 'cockatiel';
import { OUT_OF_REACH_PAUSE_MS, PG_READ_TIMEOUT } from '../../src/platform/db/clients.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { areaShapes } from '../helpers/area-shapes.ts';
import { createTestDatabase, TEST_DATABASE_URL } from '../helpers/databases.ts';
import { onTheClock } from '../helpers/fake-clock.ts';
import { startPausableProxy, type PausableProxy } from '../helpers/pausable-proxy.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';
import { createCensusCampaign, kptClaim } from '../twins/fixtures.ts';

const QUERY_TIMEOUT_MS = 400;
const REQUEST_DEADLINE_MS = 2500;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  ms: number;
}

describe('outage of PostgreSQL [postgres]', function () {
  this.timeout(60_000);
  let proxy: PausableProxy;
  let db: Db;
  let server: TestServer;
  let key: string;
  let dropDatabase: () => Promise<void>;
  let admin: Db;

  before(async function () {
    if (!TEST_DATABASE_URL) this.skip();
    const t = await createTestDatabase('postgres');
    dropDatabase = () => t.drop();
    admin = t.db;
    const target = new URL(TEST_DATABASE_URL);
    proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(TEST_DATABASE_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    db = createDb({ url: viaProxy.toString(), dataDir: '.', poolMax: 4, schema: t.schema, queryTimeoutMs: QUERY_TIMEOUT_MS });
    server = await startTestServer(db, {
      REQUEST_DEADLINE_MS: String(REQUEST_DEADLINE_MS),
      API_KEY_CACHE_MS: '0',
      API_KEY_STALE_IF_ERROR_MS: '60000',
      DB_HEALTH_TIMEOUT_MS: '300',
      RETRY_AFTER_SECONDS: '7',
    });
    key = await createTestKey(t.db);
    // The campaign kptClaim's claims go into.
    await createCensusCampaign(server, key);
  });

  after(async () => {
    await server?.stop();
    await proxy?.close();
    await db?.destroy().catch(() => {});
    await dropDatabase?.();
  });

  async function call(method: string, path: string, body?: unknown, auth: string | null = key): Promise<Answer> {
    const started = Date.now();
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { ...(auth ? { Authorization: `Bearer ${auth}` } : {}), ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, headers: res.headers, text: await res.text(), ms: Date.now() - started };
  }

  const dial = (id: string) => ({ sessionId: id, serviceCode: '*384#', phoneNumber: '+254712345678', text: '' });

  /**
   * Asks until the database serves again; recovery needs no restart. The breaker's pause passes
   * on a fake Date (cockatiel reads Date.now()), moved a pause on after each refusal so that the
   * next call is the breaker's trial; the bound is so many pauses, not the machine's time.
   * Timers stay real: a trial waits for a PostgreSQL backend to start, and a clock moved a turn
   * of the event loop at a time (onTheClock) passes the fake connect deadline first. The trial
   * is /health, which takes no key, so no key verification is stamped on the fake Date.
   */
  async function recovered(): Promise<void> {
    const clock = FakeTimers.install({ toFake: ['Date'], now: Date.now() });
    try {
      for (let paused = 0; (await call('GET', '/health', undefined, null)).status !== 200; paused += OUT_OF_REACH_PAUSE_MS) {
        if (paused >= 10_000) throw new Error('no recovery within 10 s on the fake clock');
        clock.tick(OUT_OF_REACH_PAUSE_MS);
      }
    } finally {
      clock.uninstall();
    }
    const claims = await call('GET', '/v1/claims');
    expect(claims.status, claims.text).to.equal(200);
  }

  async function expectOutageAnswers(label: string): Promise<void> {
    // Timed on the fake clock (test/helpers/fake-clock.ts): the server's deadlines fire at their
    // own time on it, whatever the load of the machine.
    const [claims, prefs, context, chain, health, ussd, unknownKey] = await onTheClock(
      () =>
        Promise.all([
          call('GET', '/v1/claims'),
          call('GET', '/user-preferences'),
          call('POST', '/agent/context', { roomId: 'kitchen' }),
          call('GET', '/chain/claims/claims'),
          call('GET', '/health'),
          call('POST', '/api/ussd', dial(`outage-${label}`)),
          call('GET', '/v1/entities', undefined, 'hth_never-seen-key-0000000000000000000000000000'),
        ]),
      10 * REQUEST_DEADLINE_MS,
    );
    for (const [name, a] of Object.entries({ claims, prefs, context, chain, health, ussd, unknownKey })) {
      expect(a.ms, `${label}: ${name} took ${a.ms} ms`).to.be.lessThan(REQUEST_DEADLINE_MS + 1000);
    }
    for (const [path, a] of [['/v1/claims', claims], ['/user-preferences', prefs]] as const) {
      expect(a.status, `${label} ${path}: ${a.text}`).to.equal(503);
      expect(a.headers.get('retry-after')).to.equal('7');
      const body = JSON.parse(a.text);
      expect(body).to.include({ type: 'urn:hearth:problem:service-unavailable', status: 503 });
      expectContractResponse('GET', path, { status: a.status, headers: a.headers, body });
    }
    // A key never seen cannot be checked: unavailable, not "your key is wrong".
    expect(unknownKey.status, unknownKey.text).to.equal(503);
    // The turn goes on without preferences (the key was verified before the outage).
    expect(context.status, context.text).to.equal(200);
    expect(JSON.parse(context.text).state).to.deep.include({ userPreferences: null });
    expect(chain.status, chain.text).to.equal(503);
    expect(chain.headers.get('retry-after')).to.equal('7');
    expect(JSON.parse(chain.text)).to.include({ code: 14 });
    expect(health.status).to.equal(503);
    expect(JSON.parse(health.text)).to.include({ database: 'disconnected' });
    expect(ussd.status).to.equal(200);
    expect(ussd.text).to.equal('END Service temporarily unavailable. Please try again later.');
  }

  it('frozen: every area answers within the deadline, 503 with Retry-After (Cosmos code 14), /agent/context degrades; it recovers on thaw', async () => {
    expect((await call('GET', '/v1/claims')).status).to.equal(200);
    expect((await call('POST', '/agent/context', { roomId: 'kitchen' })).status).to.equal(200);
    proxy.freeze();
    try {
      await expectOutageAnswers('frozen');
    } finally {
      proxy.thaw();
    }
    await recovered();
    expect((await call('POST', '/api/ussd', dial('after-thaw'))).text).to.match(/^CON /);
  });

  it('frozen: one database deadline a request, not one a call: a key honoured from the cache after its lookup timed out is not held another deadline by the query, nor is a request that arrives meanwhile', async () => {
    expect((await call('GET', '/v1/claims')).status).to.equal(200);
    proxy.freeze();
    try {
      // On the fake clock (test/helpers/fake-clock.ts): the server's deadlines fire at their own
      // time on it, and the answers are timed by it, not by how loaded the machine is.
      const [claims, later] = await onTheClock(async () => {
        // The key lookup waits for the frozen server until its client-side deadline
        // (QUERY_TIMEOUT_MS + 500); its failure (knex's 'query-error', emitted once the breaker
        // has counted it) says the server is known out of reach.
        const timedOut = new Promise<void>((resolve) => {
          const seen = (err: Error) => {
            if (!err.message.endsWith(PG_READ_TIMEOUT)) return;
            db.off('query-error', seen);
            resolve();
          };
          db.on('query-error', seen);
        });
        const first = call('GET', '/v1/claims');
        await timedOut;
        return Promise.all([first, call('GET', '/user-preferences')]);
      }, 10 * REQUEST_DEADLINE_MS);
      expect(claims.status, claims.text).to.equal(503);
      expect(claims.ms, 'the request waited for the server twice').to.be.lessThan(2 * QUERY_TIMEOUT_MS + 500);
      // Arrived while the server was known out of reach: answered at once.
      expect(later.status, later.text).to.equal(503);
      expect(later.ms).to.be.lessThan(QUERY_TIMEOUT_MS);
      expect(JSON.parse(later.text)).to.include({ type: 'urn:hearth:problem:service-unavailable' });
    } finally {
      proxy.thaw();
    }
    await recovered();
  });

  it('a connection terminated on a healthy server fails only the call it carried: the rest are served (no pause for an out-of-reach server)', async () => {
    for (let i = 0; i < 8; i++) expect((await call('GET', '/v1/claims')).status).to.equal(200);
    const answers: Answer[] = [];
    let killed = false;
    const worker = async () => {
      for (let i = 0; i < 15; i++) {
        answers.push(await call('GET', '/v1/claims'));
        if (answers.length === 12 && !killed) {
          killed = true;
          // What an administrator's kill, a pooler's restart or an idle cut does to the pool's connections.
          const rows = await rowsOf<{ n: number }>(admin.raw('select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where client_port = any(?)', [proxy.upstreamPorts()]));
          expect(rows[0]!.n).to.be.greaterThan(0);
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(killed).to.equal(true);
    const failed = answers.filter((a) => a.status !== 200);
    // At most the calls in flight on the pool's 4 connections when they were terminated.
    expect(failed.length, failed.map((a) => a.text).join('\n')).to.be.at.most(4);
    for (const a of failed) expect(a.status).to.equal(503);
    expect(answers.slice(-20).every((a) => a.status === 200)).to.equal(true);
  });

  it('frozen: claims submitted together are each 503 within the deadline, and nothing of them is stored', async () => {
    const claims = Array.from({ length: 6 }, () => kptClaim());
    expect((await call('GET', '/v1/claims')).status).to.equal(200);
    proxy.freeze();
    let answers: Answer[];
    try {
      // Timed on the fake clock, as expectOutageAnswers.
      answers = await onTheClock(() => Promise.all(claims.map((c) => call('POST', '/v1/claims', c))), 10 * REQUEST_DEADLINE_MS);
    } finally {
      proxy.thaw();
    }
    for (const a of answers) {
      expect(a.status, a.text).to.equal(503);
      expect(a.ms).to.be.lessThan(REQUEST_DEADLINE_MS + 1000);
    }
    await recovered();
    // The frozen calls' statements reach the server after the thaw, their callers long answered:
    // once it has run them all (proxy.quiet(): each connection answered or closed), nothing
    // they did may have been kept.
    await proxy.quiet();
    const resent = await Promise.all(claims.map((c) => call('POST', '/v1/claims', c)));
    expect(resent.map((a) => a.status), resent.map((a) => a.text).join('\n')).to.deep.equal(claims.map(() => 201));
  });

  it('down: the same answers at once, and service again once it is back', async () => {
    expect((await call('GET', '/v1/claims')).status).to.equal(200);
    await proxy.down();
    try {
      await expectOutageAnswers('down');
    } finally {
      await proxy.up();
    }
    await recovered();
  });
});

describe('SQLite storage failing [sqlite]', function () {
  this.timeout(30_000);
  it('a full disk (SQLITE_FULL) or a file it may not write (SQLITE_READONLY) is 503 with Retry-After, not a 500; writes go on once it has room', async () => {
    const t = await createTestDatabase('sqlite');
    const server = await startTestServer(t.db, { RETRY_AFTER_SECONDS: '4' });
    try {
      const key = await createTestKey(t.db);
      const create = () =>
        fetch(`${server.baseUrl}/v1/entities`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ type: 'Household', properties: { note: 'x'.repeat(20_000) } }),
        });
      expect((await create()).status).to.equal(201);
      // The database may grow no further: SQLite's own "database or disk is full".
      const [{ page_count }] = (await rowsOf<{ page_count: number }>(t.db.raw('pragma page_count'))) as [{ page_count: number }];
      await t.db.raw(`pragma max_page_count = ${page_count}`);
      const full = await create();
      expect(full.status).to.equal(503);
      expect(full.headers.get('retry-after')).to.equal('4');
      expectContractResponse('POST', '/v1/entities', { status: 503, headers: full.headers, body: await full.json() });
      await t.db.raw('pragma max_page_count = 1073741823');
      await t.db.raw('pragma query_only = 1');
      expect((await create()).status).to.equal(503);
      await t.db.raw('pragma query_only = 0');
      expect((await create()).status).to.equal(201);
    } finally {
      await server.stop();
      await t.drop();
    }
  });
});

describe('request deadline', () => {
  it('a request still unanswered at REQUEST_DEADLINE_MS gets 503 with Retry-After in its area shape; the late answer is dropped', async () => {
    const app = express();
    app.use(requestDeadline(150));
    let late: Promise<void> | undefined;
    // Never answers: once the connection is done with, the deadline has answered for it.
    const slow: express.RequestHandler = (_req, res) => {
      late = new Promise((resolve) => res.once('close', () => {
        expect(res.headersSent).to.equal(true);
        resolve();
      }));
    };
    app.get('/v1/slow', slow);
    app.get('/chain/slow', slow);
    app.post('/api/ussd', slow);
    app.use(errorHandler(pino({ level: 'silent' }), { rendererFor: areaShapes, retryAfterSeconds: 9 }));
    const problem = await request(app).get('/v1/slow');
    expect(problem.status).to.equal(503);
    expect(problem.headers['retry-after']).to.equal('9');
    expect(JSON.parse(problem.text)).to.include({ type: 'urn:hearth:problem:service-unavailable' });
    const cosmos = await request(app).get('/chain/slow');
    expect(cosmos.status).to.equal(503);
    expect(cosmos.body).to.include({ code: 14 });
    const ussd = await request(app).post('/api/ussd').send({});
    expect(ussd.status).to.equal(200);
    expect(ussd.text).to.equal('END Service temporarily unavailable. Please try again later.');
    await late;
  });

  it('an answered request is left alone', async () => {
    const app = express();
    app.use(requestDeadline(100));
    app.get('/fast', (_req, res) => {
      res.json({ ok: true });
    });
    const res = await request(app).get('/fast');
    expect(res.status).to.equal(200);
  });
});

describe('isDatabaseUnavailable', () => {
  it('tells outages and deadlines (either database) from faults and bad requests', () => {
    const outages = [
      // Knex's pool: every connection busy past the deadline.
      new Error('Knex: Timeout acquiring a connection. The pool is probably full.'),
      new Error('select 1 - Query read timeout'),
      // The circuit breaker: the server was found out of reach moments ago.
      new BrokenCircuitError(),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      // SQLite's storage: a full disk, an I/O error, a file it may not write or open.
      Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }),
      Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' }),
      Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' }),
      Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }),
      new Error('outer', { cause: Object.assign(new Error('x'), { code: '08006' }) }),
      Object.assign(new Error('database "hearth" is not currently accepting connections'), { code: '55000' }),
      Object.assign(new Error('database "hearth" does not exist'), { code: '3D000' }),
      Object.assign(new Error('password authentication failed for user "hearth"'), { code: '28P01' }),
      Object.assign(new Error('no pg_hba.conf entry'), { code: '28000' }),
      Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }),
    ];
    const faults = [
      new Error('boom'),
      Object.assign(new Error('duplicate key'), { code: '23505' }),
      Object.assign(new Error('syntax error'), { code: '42601' }),
      Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }),
      undefined,
      'text',
    ];
    for (const e of outages) expect(isDatabaseUnavailable(e), String(e)).to.equal(true);
    for (const e of faults) expect(isDatabaseUnavailable(e), String(e)).to.equal(false);
  });
});
