import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createClient } from 'redis';
import { createDb } from '../../src/platform/db/index.ts';
import { REDIS_PREFIX } from '../../src/ussd/rate-limit.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { newSessionId, postUssd, startUssdServer } from './helpers.ts';

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
        expect(Number(await redis.get(`${REDIS_PREFIX}${ip}`))).to.equal(6);
      } finally {
        await redis.del(`${REDIS_PREFIX}${ip}`);
        await redis.close();
        await a.stop();
        await b.stop();
      }
    });
  });
});

describe('USSD rate limit with an unreachable Redis', () => {
  it('start-up fails with a message naming REDIS_URL instead of hanging', async function () {
    this.timeout(15_000);
    const db = createDb({ url: 'sqlite::memory:', dataDir: '.', poolMax: 1 });
    let error: unknown;
    try {
      await startUssdServer(db, { REDIS_URL: 'redis://127.0.0.1:1' }).catch((e) => (error = e));
      expect(String(error)).to.match(/REDIS_URL/);
    } finally {
      await db.destroy();
    }
  });
});
