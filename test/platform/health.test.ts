import { createServer, type Server } from 'node:net';
import FakeTimers from '@sinonjs/fake-timers';
import { expect } from 'chai';
import { getHealth, getRoot } from '../../generated/openapi/sdk.gen.ts';
import { createDb, databaseUnreachable, pingDb } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase, TEST_DATABASE_URL } from '../helpers/databases.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

forEachDatabase('health endpoints', (t) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(t.db, { NODE_ENV: 'test' });
  });
  after(() => server.stop());

  it('GET /health answers 200 with database connected, from a real query', async () => {
    const res = await getHealth({ client: server.client });
    expect(res.response.status).to.equal(200);
    expectContractResponse('get', '/health', { status: 200, headers: res.response.headers, body: res.data });
    expect(res.data).to.include({ status: 'ok', environment: 'test', database: 'connected' });
    expect(res.data!.timestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Number.isInteger(res.data!.uptime)).to.equal(true);
  });

  it('GET / answers 200 with the running notice', async () => {
    const res = await getRoot({ client: server.client });
    expect(res.response.status).to.equal(200);
    expectContractResponse('get', '/', { status: 200, headers: res.response.headers, body: res.data });
    expect(res.data!.message).to.match(/running/);
  });

  it('ignores a query string: a probe that adds one still gets its 200', async () => {
    for (const path of ['/health?probe=1', '/?cache-bust=123']) {
      const res = await fetch(`${server.baseUrl}${path}`);
      expect(res.status, path).to.equal(200);
      expectContractResponse('get', path.split('?')[0]!, { status: 200, headers: res.headers, body: await res.json() });
    }
  });
});

describe('health with the database unreachable', () => {
  it('GET /health answers 503 disconnected when the SQLite database is closed', async () => {
    const db = createDb({ url: 'sqlite::memory:', dataDir: '.', poolMax: 1 });
    // Migrated, as `hearth start` leaves it: start-up reads the credentials' base URL and keys.
    await migrateLatest(db);
    const server = await startTestServer(db);
    try {
      await db.destroy();
      const res = await getHealth({ client: server.client });
      expect(res.response.status).to.equal(503);
      expectContractResponse('get', '/health', { status: 503, headers: res.response.headers, body: res.error });
      expect(res.error).to.include({ database: 'disconnected', status: 'degraded' });
      const root = await getRoot({ client: server.client });
      expect(root.response.status).to.equal(200);
    } finally {
      await server.stop();
    }
  });

  it('start-up with PostgreSQL refusing connections stops with the error `hearth start` explains (the database is read before serving)', async () => {
    const db = createDb({ url: 'postgres://postgres@127.0.0.1:1/none', dataDir: '.', poolMax: 1 });
    let err: unknown;
    try {
      await (await startTestServer(db, { DB_HEALTH_TIMEOUT_MS: '3000' })).stop();
    } catch (e) {
      err = e;
    } finally {
      await db.destroy();
    }
    expect(databaseUnreachable(err)).to.match(/^Cannot reach the database \(ECONNREFUSED\)/);
  });

  describe('a database that accepts connections but never answers', () => {
    let black: Server;
    let port: number;
    const sockets = new Set<import('node:net').Socket>();
    before(async () => {
      black = createServer((s) => sockets.add(s));
      await new Promise<void>((r) => black.listen(0, '127.0.0.1', r));
      port = (black.address() as { port: number }).port;
    });
    after(() => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => black.close(() => r()));
    });

    it('is reported disconnected once the timeout passes, not after the connect timeout', async () => {
      const db = createDb({ url: `postgres://postgres@127.0.0.1:${port}/none`, dataDir: '.', poolMax: 1 });
      // On a fake clock, 200 ms pass and nothing else: the answer is there by then, whatever the
      // connect timeout (which would have to pass too to settle it).
      const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      try {
        const ping = pingDb(db, 200);
        await clock.tickAsync(200);
        const ok = await Promise.race([ping, Promise.resolve('not yet')]);
        expect(ok).to.equal(false);
      } finally {
        clock.uninstall();
      }
      // The pending connect is abandoned; destroying the pool would wait for it.
      void db.destroy().catch(() => {});
    });
  });

  if (TEST_DATABASE_URL) {
    it('pingDb answers true on the live PostgreSQL', async () => {
      const db = createDb({ url: TEST_DATABASE_URL, dataDir: '.', poolMax: 1 });
      expect(await pingDb(db, 2000)).to.equal(true);
      await db.destroy();
    });
  }
});
