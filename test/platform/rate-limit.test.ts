// The rate limits of areas A (/v1), C (/chain) and D (/agent, /user-preferences): per API key
// (A, D) or client address (C, and requests without a valid key), RateLimit headers of IETF
// draft ratelimit-headers-08 on what they count, 429 in the area's own error shape, one budget
// across instances through Redis (TEST_REDIS_URL), and a Redis outage failing open.
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { createClient } from 'redis';
import { loadChainOpenApiDocument } from '../../src/chain/openapi.ts';
import { loadOpenApiDocument } from '../../src/platform/contract.ts';
import { ApiKeyService } from '../../src/platform/keys/service.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase, type TestDatabase } from '../helpers/databases.ts';
import { startPausableProxy } from '../helpers/pausable-proxy.ts';
import { startTestServer } from '../helpers/server.ts';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined;
const randomIp = () => `10.${[1, 2, 3].map(() => randomBytes(1)[0]).join('.')}`;

/** Who a request counts against: an API key (its id and secret), or a client address sent through a trusted proxy. */
type Caller = { keyId: string; secret: string } | { ip: string };

interface AreaCase {
  area: 'twins' | 'chain' | 'agent';
  variable: string;
  /** A request every caller of the area may send, answered 200 under the limit. */
  path: string;
  /** The contract's operation of `path`, for areas A and D. */
  operation?: [method: string, template: string];
  keyed: boolean;
  /** Asserts the body of a 429 is in the area's error shape. */
  expectRefusal(body: unknown): void;
}

const problem = (body: unknown) => expect(body).to.deep.include({ type: 'urn:hearth:problem:rate-limited', title: 'Too Many Requests', status: 429 });
const AREAS: AreaCase[] = [
  { area: 'twins', variable: 'TWINS_RATE_LIMIT_PER_MINUTE', path: '/v1/entities', operation: ['GET', '/v1/entities'], keyed: true, expectRefusal: problem },
  { area: 'agent', variable: 'AGENT_RATE_LIMIT_PER_MINUTE', path: '/user-preferences?roomId=r1', operation: ['GET', '/user-preferences'], keyed: true, expectRefusal: problem },
  {
    area: 'chain',
    variable: 'CHAIN_RATE_LIMIT_PER_MINUTE',
    path: '/chain/token/params',
    keyed: false,
    // grpc-gateway's JSON status: RESOURCE_EXHAUSTED
    expectRefusal: (body) => expect(body).to.deep.equal({ code: 8, message: 'Too many requests; retry after the seconds in Retry-After.', details: [] }),
  },
];

async function newCaller(t: TestDatabase, keyed: boolean): Promise<Caller> {
  if (!keyed) return { ip: randomIp() };
  const { key, info } = await new ApiKeyService(t.db).create({ name: 'rate-limit', principalDid: 'did:ixo:entity:00000000000000000000000000000001' });
  return { keyId: info.id, secret: key };
}

function send(baseUrl: string, path: string, caller: Caller): Promise<Response> {
  return fetch(`${baseUrl}${path}`, { headers: 'secret' in caller ? { Authorization: `Bearer ${caller.secret}` } : { 'X-Forwarded-For': caller.ip } });
}

/** The store key the limit counts a caller under: a key's id, never its secret. */
const storeKey = (caller: Caller) => ('keyId' in caller ? `key:${caller.keyId}` : `ip:${caller.ip}`);
/** The draft-8 partition key express-rate-limit derives from the store key. */
const partitionKey = (key: string) => Buffer.from(createHash('sha256').update(key).digest('hex').slice(0, 12)).toString('base64');

forEachDatabase('rate limits of areas A, C and D', (t) => {
  for (const c of AREAS) {
    describe(`area ${c.area}`, () => {
      it(`${c.variable}+1st request in a minute gets 429 in the area's shape with Retry-After and the RateLimit headers; under it, RateLimit and RateLimit-Policy`, async () => {
        const server = await startTestServer(t.db, { [c.variable]: '3', TRUST_PROXY_ENABLED: 'true' });
        try {
          const caller = await newCaller(t, c.keyed);
          for (let i = 0; i < 3; i++) {
            const ok = await send(server.baseUrl, c.path, caller);
            expect(ok.status).to.equal(200);
            expect(ok.headers.get('ratelimit')).to.match(new RegExp(`^"3-in-1min"; r=${2 - i}; t=(60|59)$`));
            expect(ok.headers.get('ratelimit-policy')).to.equal(`"3-in-1min"; q=3; w=60; pk=:${partitionKey(storeKey(caller))}:`);
            await ok.arrayBuffer();
          }
          const refused = await send(server.baseUrl, c.path, caller);
          expect(refused.status).to.equal(429);
          expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
          expect(refused.headers.get('ratelimit')).to.match(/^"3-in-1min"; r=0; t=\d+$/);
          expect(refused.headers.get('ratelimit-policy')).to.match(/^"3-in-1min"; q=3; w=60; pk=:[^:]+:$/);
          const body = await refused.json();
          c.expectRefusal(body);
          if (c.operation) {
            expect(refused.headers.get('content-type')).to.match(/^application\/problem\+json/);
            expectContractResponse(c.operation[0], c.operation[1], { status: 429, headers: refused.headers, body });
          }
          // Another area's requests are not counted by this one.
          expect((await fetch(`${server.baseUrl}/health`)).status).to.equal(200);
        } finally {
          await server.stop();
        }
      });

      it(`two ${c.keyed ? 'API keys' : 'client addresses'} have separate budgets`, async () => {
        const server = await startTestServer(t.db, { [c.variable]: '2', TRUST_PROXY_ENABLED: 'true' });
        try {
          const [a, b] = [await newCaller(t, c.keyed), await newCaller(t, c.keyed)];
          const statuses = [];
          for (const caller of [a, a, a, b, b, b]) statuses.push((await send(server.baseUrl, c.path, caller)).status);
          expect(statuses).to.deep.equal([200, 200, 429, 200, 200, 429]);
        } finally {
          await server.stop();
        }
      });

      describe('with Redis (TEST_REDIS_URL)', function () {
        before(function () {
          if (!TEST_REDIS_URL) this.skip();
        });

        it(`two instances share one ${c.keyed ? "key's" : "address's"} budget, counted in Redis under the ${c.keyed ? "key's id" : 'address'}`, async () => {
          const env = { [c.variable]: '4', TRUST_PROXY_ENABLED: 'true', REDIS_URL: TEST_REDIS_URL! };
          const a = await startTestServer(t.db, env);
          const b = await startTestServer(t.open(), env);
          const caller = await newCaller(t, c.keyed);
          const key = `hearth:${c.area}:rl:${storeKey(caller)}`;
          const redis = createClient({ url: TEST_REDIS_URL });
          await redis.connect();
          try {
            const hit = async (url: string) => (await send(url, c.path, caller)).status;
            expect([await hit(a.baseUrl), await hit(b.baseUrl), await hit(a.baseUrl), await hit(b.baseUrl)]).to.deep.equal([200, 200, 200, 200]);
            expect(await hit(a.baseUrl)).to.equal(429);
            expect(await hit(b.baseUrl)).to.equal(429);
            expect(await redis.zCard(key)).to.equal(4);
            if ('secret' in caller) expect(await redis.keys(`*${caller.secret}*`)).to.deep.equal([]);
          } finally {
            await redis.del(key);
            await redis.close();
            await a.stop();
            await b.stop();
          }
        });

        it('Redis going away lets requests through, uncounted, with one line in the service log', async () => {
          const target = new URL(TEST_REDIS_URL!);
          const proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port || 6379) });
          let logs = '';
          const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _e, cb) => ((logs += String(chunk)), cb()) }));
          const url = `redis://127.0.0.1:${proxy.port}${target.pathname}`;
          const server = await startTestServer(t.db, { [c.variable]: '2', TRUST_PROXY_ENABLED: 'true', REDIS_URL: url }, { logger });
          const caller = await newCaller(t, c.keyed);
          try {
            const hit = async () => (await send(server.baseUrl, c.path, caller)).status;
            expect([await hit(), await hit(), await hit()]).to.deep.equal([200, 200, 429]);
            await proxy.down();
            expect([await hit(), await hit(), await hit()]).to.deep.equal([200, 200, 200]);
            const lines = logs.split('\n').filter((l) => l.includes(`${c.area} rate limit not counted`));
            expect(lines).to.have.length(1);
            expect(JSON.parse(lines[0]!)).to.include({ level: 40, area: c.area });
          } finally {
            await server.stop();
            await proxy.close();
            const redis = createClient({ url: TEST_REDIS_URL });
            await redis.connect();
            await redis.del(`hearth:${c.area}:rl:${storeKey(caller)}`);
            await redis.close();
          }
        });
      });
    });
  }

  for (const c of AREAS.filter((a) => a.keyed)) {
    it(`area ${c.area}: requests without a valid key are counted per client address, so a flood of 401s meets the limit too; a valid key keeps its own budget`, async () => {
      const server = await startTestServer(t.db, { [c.variable]: '3' });
      try {
        const statuses = [];
        for (const auth of [undefined, 'Bearer nope', undefined]) statuses.push((await fetch(`${server.baseUrl}${c.path}`, { headers: auth ? { Authorization: auth } : {} })).status);
        expect(statuses).to.deep.equal([401, 401, 401]);
        const refused = await fetch(`${server.baseUrl}${c.path}`);
        expect(refused.status).to.equal(429);
        expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
        const body = await refused.json();
        c.expectRefusal(body);
        expectContractResponse(c.operation![0], c.operation![1], { status: 429, headers: refused.headers, body });
        const caller = await newCaller(t, true);
        expect((await send(server.baseUrl, c.path, caller)).status).to.equal(200);
      } finally {
        await server.stop();
      }
    });
  }

  it('area A: public routes (no key) share the client address budget', async () => {
    const server = await startTestServer(t.db, { TWINS_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${server.baseUrl}/v1/contexts/kpt-v1.jsonld`)).status);
      expect(statuses).to.deep.equal([200, 200, 429]);
      const refused = await fetch(`${server.baseUrl}/v1/evidence/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy`);
      expect(refused.status).to.equal(429);
      expect(await refused.json()).to.deep.include({ status: 429, instance: '/v1/evidence/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' });
    } finally {
      await server.stop();
    }
  });

});

describe('rate limits in the contracts', () => {
  type Responses = Record<string, { $ref?: string; headers?: Record<string, unknown> }>;
  type Doc = { paths: Record<string, Record<string, { responses?: Responses }>>; components: { responses: Record<string, { headers?: Record<string, unknown> }> } };
  const resolve = (doc: Doc, r: { $ref?: string; headers?: Record<string, unknown> }) => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()!]! : r);
  const operations = (doc: Doc, under: (path: string) => boolean) =>
    Object.entries(doc.paths).filter(([path]) => under(path)).flatMap(([path, item]) => Object.entries(item).filter(([, op]) => op.responses).map(([method, op]) => ({ where: `${method} ${path}`, responses: op.responses! })));

  it('every operation of areas A, B and D declares a 429 with Retry-After, and RateLimit and RateLimit-Policy on every answer', () => {
    const doc = loadOpenApiDocument() as unknown as Doc;
    const ops = operations(doc, (p) => /^\/(v1|agent|user-preferences|api\/ussd)(\/|$)/.test(p));
    expect(ops.length).to.be.greaterThan(30);
    for (const { where, responses } of ops) {
      expect(resolve(doc, responses['429']!).headers, where).to.include.keys('Retry-After', 'RateLimit', 'RateLimit-Policy');
      for (const [status, response] of Object.entries(responses)) expect(resolve(doc, response).headers, `${where} ${status}`).to.include.keys('RateLimit', 'RateLimit-Policy');
    }
  });

  it("area C's generated document declares the 429 (RESOURCE_EXHAUSTED) with Retry-After on every route, and the RateLimit headers on its answers", () => {
    const doc = loadChainOpenApiDocument() as unknown as Doc;
    const ops = operations(doc, () => true);
    expect(ops.length).to.be.greaterThan(10);
    for (const { where, responses } of ops) {
      expect(resolve(doc, responses['429']!).headers, where).to.include.keys('Retry-After', 'RateLimit', 'RateLimit-Policy');
      expect(resolve(doc, responses['200']!).headers, where).to.include.keys('RateLimit', 'RateLimit-Policy');
    }
  });
});
