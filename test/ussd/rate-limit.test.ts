import { randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { pino } from 'pino';
import { createClient } from 'redis';
import { createDb } from '../../src/platform/db/index.ts';
import type { Options } from 'express-rate-limit';
import { SlidingWindowMemoryStore, SlidingWindowRedisStore } from '../../src/platform/http/sliding-window.ts';
import { RATE_LIMIT_REPLY, REDIS_PREFIX } from '../../src/ussd/rate-limit.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { GatewaySession, newSessionId, postUssd, startUssdServer } from './helpers.ts';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined;
const body = () => ({ sessionId: newSessionId(), serviceCode: '*384#', phoneNumber: '+254712345678', text: '' });
const randomIp = () => `10.${[1, 2, 3].map(() => randomBytes(1)[0]).join('.')}`;

forEachDatabase('USSD rate limit', (t) => {
  it('the limit+1st request in a minute from one address gets 429 with Retry-After', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '5' });
    try {
      for (let i = 0; i < 5; i++) expect((await postUssd(server.baseUrl, body())).status).to.equal(200);
      const res = await fetch(`${server.baseUrl}/api/ussd`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body()) });
      expect(res.status).to.equal(429);
      expect(Number(res.headers.get('retry-after'))).to.be.within(1, 60);
      // the documented draft-8 headers, as every area sends them: the policy and what is left of it
      expect(res.headers.get('ratelimit-policy')).to.match(/^"5-in-1min"; q=5; w=60; pk=:[^:]+:$/);
      expect(res.headers.get('ratelimit')).to.match(/^"5-in-1min"; r=0; t=\d+$/);
      const text = await res.text();
      expect(text).to.match(/^END Too many requests/);
      expectContractResponse('POST', '/api/ussd', { status: 429, headers: res.headers, body: text });
      // invalid requests count too, and the operator routes share the budget
      expect((await postUssd(server.baseUrl, {})).status).to.equal(429);
      const op = await fetch(`${server.baseUrl}/api/ussd/sessions`);
      expect(op.status).to.equal(429);
      expectContractResponse('GET', '/api/ussd/sessions', { status: 429, headers: op.headers, body: await op.json() });
      // other areas are not limited by area B
      expect((await fetch(`${server.baseUrl}/`)).status).to.equal(200);
    } finally {
      await server.stop();
    }
  });

  it('without TRUST_PROXY_ENABLED, X-Forwarded-For is ignored: spoofed addresses share one budget', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await postUssd(server.baseUrl, body(), { headers: { 'X-Forwarded-For': randomIp() } })).status);
      expect(statuses).to.deep.equal([200, 200, 200, 429]);
    } finally {
      await server.stop();
    }
  });

  it('with TRUST_PROXY_ENABLED=true, each real client (X-Forwarded-For) has its own budget', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY_ENABLED: 'true' });
    try {
      const a = randomIp();
      const b = randomIp();
      const hit = async (ip: string) => (await postUssd(server.baseUrl, body(), { headers: { 'X-Forwarded-For': ip } })).status;
      expect([await hit(a), await hit(a), await hit(a), await hit(a)]).to.deep.equal([200, 200, 200, 429]);
      expect(await hit(b)).to.equal(200);
      // only one hop is trusted: an address the client prepends cannot buy a fresh budget
      expect((await postUssd(server.baseUrl, body(), { headers: { 'X-Forwarded-For': `${randomIp()}, ${a}` } })).status).to.equal(429);
    } finally {
      await server.stop();
    }
  });

  describe('with Redis (TEST_REDIS_URL)', function () {
    before(function () {
      if (!TEST_REDIS_URL) this.skip();
    });

    it('Redis going away lets hops through, uncounted, with one line in the service log and nothing on the console', async () => {
      // A TCP proxy to Redis, closed mid-way as Redis going down would be.
      const target = new URL(TEST_REDIS_URL!);
      const sockets = new Set<Socket>();
      const proxy = createServer((client) => {
        const upstream = connect(Number(target.port || 6379), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('error', () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      let logs = '';
      const logger = pino({ level: 'warn' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
      const url = `redis://127.0.0.1:${(proxy.address() as AddressInfo).port}${target.pathname}`;
      const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY_ENABLED: 'true', REDIS_URL: url }, { logger });
      const consoleError = console.error;
      let printed = 0;
      console.error = () => void printed++;
      try {
        const ip = randomIp();
        const hit = async () => (await postUssd(server.baseUrl, body(), { headers: { 'X-Forwarded-For': ip } })).status;
        expect([await hit(), await hit(), await hit()]).to.deep.equal([200, 200, 429]);
        proxy.close();
        for (const s of sockets) s.destroy();
        expect([await hit(), await hit(), await hit()]).to.deep.equal([200, 200, 200]);
        const lines = logs.split('\n').filter((l) => l.includes('USSD rate limit not counted'));
        expect(lines).to.have.length(1);
        expect(JSON.parse(lines[0]!)).to.include({ level: 40 });
        expect(printed).to.equal(0);
      } finally {
        console.error = consoleError;
        await server.stop();
      }
    });

    it('two instances share one count', async () => {
      const env = { USSD_RATE_LIMIT_PER_MINUTE: '4', TRUST_PROXY_ENABLED: 'true', REDIS_URL: TEST_REDIS_URL! };
      const a = await startUssdServer(t.db, env);
      const b = await startUssdServer(t.open(), env);
      const ip = randomIp();
      const redis = createClient({ url: TEST_REDIS_URL });
      await redis.connect();
      try {
        const hit = async (url: string) => (await postUssd(url, body(), { headers: { 'X-Forwarded-For': ip } })).status;
        expect([await hit(a.baseUrl), await hit(b.baseUrl), await hit(a.baseUrl), await hit(b.baseUrl)]).to.deep.equal([200, 200, 200, 200]);
        expect(await hit(a.baseUrl)).to.equal(429);
        expect(await hit(b.baseUrl)).to.equal(429);
        // A sorted set of the allowed hits' times; refused hits are not recorded.
        expect(await redis.zCard(`${REDIS_PREFIX}${ip}`)).to.equal(4);
      } finally {
        await redis.del(`${REDIS_PREFIX}${ip}`);
        await redis.close();
        await a.stop();
        await b.stop();
      }
    });

    it('the Redis window slides: a place frees up when the oldest hit leaves it, not at a fixed edge', async () => {
      const redis = createClient({ url: TEST_REDIS_URL });
      await redis.connect();
      const prefix = `hearth:test:sw:${randomBytes(4).toString('hex')}:`;
      const store = new SlidingWindowRedisStore((args) => redis.sendCommand(args), prefix);
      store.init({ windowMs: 60_000, limit: 2 } as Options);
      try {
        expect((await store.increment('k')).totalHits).to.equal(1);
        await store.resetKey('k');
        // Two earlier hits on Redis' own clock (microseconds), as the store records them: one
        // 61 s ago, just out of the window, and one 30 s ago, in it.
        const [seconds, micros] = await redis.sendCommand<[string, string]>(['TIME']);
        const nowUs = Number(seconds) * 1_000_000 + Number(micros);
        const inWindowUs = nowUs - 30_000_000;
        await redis.sendCommand(['ZADD', `${prefix}k`, String(nowUs - 61_000_000), 'left', String(inWindowUs), 'kept']);
        // the first hit has left the window, the second has not
        expect((await store.increment('k')).totalHits).to.equal(2);
        const refused = await store.increment('k');
        expect(refused.totalHits).to.equal(3);
        // the next place frees up when the oldest hit in the window leaves it
        expect(refused.resetTime!.getTime()).to.equal(Math.floor((inWindowUs + 60_000_000) / 1000));
        await store.decrement('k');
        expect((await store.increment('k')).totalHits).to.equal(2);
        await store.resetKey('k');
        expect((await store.increment('k')).totalHits).to.equal(1);
      } finally {
        await store.resetKey('k');
        await redis.close();
      }
    });
  });

  it('hops from a listed gateway address are limited per phone number, answered 200 END, not per address', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '2', USSD_PHONE_RATE_LIMIT_PER_MINUTE: '3', USSD_GATEWAY_ADDRESSES: '127.0.0.0/8' });
    try {
      const phone = (phoneNumber: string) => ({ ...body(), phoneNumber });
      const a = [];
      for (let i = 0; i < 4; i++) a.push(await postUssd(server.baseUrl, phone('+254711000001')));
      expect(a.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
      expect(a.slice(0, 3).map((r) => r.text.slice(0, 4))).to.deep.equal(['CON ', 'CON ', 'CON ']);
      expect(a[3]!.text).to.equal(RATE_LIMIT_REPLY);
      expectContractResponse('POST', '/api/ussd', { status: 200, headers: { 'content-type': a[3]!.contentType }, body: a[3]!.text });
      // another household behind the same gateway address has its own budget
      const b = await postUssd(server.baseUrl, phone('+254711000002'));
      expect(b.text).to.match(/^CON /);
    } finally {
      await server.stop();
    }
  });

  it("a phone over its limit is told so in its session's language (Kiswahili chosen in the session)", async () => {
    const server = await startUssdServer(t.db, { USSD_PHONE_RATE_LIMIT_PER_MINUTE: '4', USSD_GATEWAY_ADDRESSES: '127.0.0.0/8' });
    try {
      const s = new GatewaySession([server.baseUrl], '+254711000009');
      await s.dial();
      expect(await s.walk('9', '2', '1')).to.match(/^CON /);
      expect(await s.send('0')).to.equal('END Maombi ni mengi mno. Tafadhali jaribu tena baada ya dakika moja.');
    } finally {
      await server.stop();
    }
  });

  it('an address outside the gateway list keeps the per-address limit and its 429', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '2', USSD_GATEWAY_ADDRESSES: '192.0.2.0/24' });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await postUssd(server.baseUrl, body())).status);
      expect(statuses).to.deep.equal([200, 200, 429]);
    } finally {
      await server.stop();
    }
  });

  it('with TRUST_PROXY naming other proxies, a client reaching Hearth directly cannot spoof X-Forwarded-For', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY_ENABLED: 'true', TRUST_PROXY: '192.0.2.10' });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await postUssd(server.baseUrl, body(), { headers: { 'X-Forwarded-For': randomIp() } })).status);
      expect(statuses).to.deep.equal([200, 200, 429]);
    } finally {
      await server.stop();
    }
  });
});

describe('sliding-window memory store', () => {
  it('never allows more than the limit in any window, across the edge where a fixed window would reset', () => {
    let now = 0;
    const store = new SlidingWindowMemoryStore(() => now);
    store.init({ windowMs: 60_000, limit: 3 } as Options);
    try {
      now = 59_000;
      expect([1, 2, 3].map(() => store.increment('ip').totalHits)).to.deep.equal([1, 2, 3]);
      now = 61_000;
      // a fixed window would have reset at 60 s
      const refused = store.increment('ip');
      expect(refused.totalHits).to.equal(4);
      expect(refused.resetTime!.getTime()).to.equal(119_000);
      now = 118_999;
      expect(store.increment('ip').totalHits).to.equal(4);
      now = 119_000;
      expect([1, 2, 3].map(() => store.increment('ip').totalHits)).to.deep.equal([1, 2, 3]);
      expect(store.increment('other').totalHits).to.equal(1);
      store.decrement('other');
      expect(store.increment('other').totalHits).to.equal(1);
      store.resetKey('ip');
      expect(store.increment('ip').totalHits).to.equal(1);
    } finally {
      store.shutdown();
    }
  });
});

describe('USSD rate limit with an unreachable Redis', () => {
  it('start-up fails with a message naming REDIS_URL instead of hanging', async function () {
    this.timeout(15_000);
    const db = createDb({ url: 'sqlite::memory:', dataDir: '.', poolMax: 1 });
    let error: unknown;
    try {
      // Migrated, as `hearth start` leaves it: area A reads its base URL and keys first.
      await migrateLatest(db);
      await startUssdServer(db, { REDIS_URL: 'redis://127.0.0.1:1' }).catch((e) => (error = e));
      expect(String(error)).to.match(/REDIS_URL/);
    } finally {
      await db.destroy();
    }
  });
});
