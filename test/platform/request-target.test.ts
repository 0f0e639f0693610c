// The one request-target rule: every odd target form is refused, redirected or reduced to the
// path it names, so no request reaches a handler past authentication (issue #16, item 1).
import { request as httpRequest } from 'node:http';
import express from 'express';
import request from 'supertest';
import { expect } from 'chai';
import { cleanPath, judgeRequestTarget } from '../../src/platform/http/request-target.ts';
import { operationOf, operationResolver } from '../../src/platform/http/operations.ts';
import { loadOpenApiDocument } from '../../src/platform/contract.ts';
import { contractOnly } from '../../src/platform/openapi.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Sends `target` as the request line's target, byte for byte (no client normalises it). */
function rawRequest(baseUrl: string, method: string, target: string, body?: string, key?: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const headers = { ...(body ? { 'Content-Type': 'application/json' } : {}), ...(key ? { Authorization: `Bearer ${key}` } : {}) };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path: target, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('request-target rule (unit)', () => {
  it('keeps a clean origin-form target as it is', () => {
    expect(judgeRequestTarget('/v1/claims?limit=2')).to.deep.equal({ ok: true, url: '/v1/claims?limit=2' });
    expect(judgeRequestTarget('/')).to.deep.equal({ ok: true, url: '/' });
    expect(judgeRequestTarget('/api/ussd/')).to.deep.equal({ ok: true, url: '/api/ussd/' });
  });

  it('reduces absolute-form to origin-form', () => {
    expect(judgeRequestTarget('http://example.org/v1/claims?x=1')).to.deep.equal({ ok: true, url: '/v1/claims?x=1' });
    expect(judgeRequestTarget('HTTPS://example.org')).to.deep.equal({ ok: true, url: '/' });
    expect(judgeRequestTarget('http://example.org:8080?x=1')).to.deep.equal({ ok: true, url: '/?x=1' });
  });

  it('judges an absolute-form target by the path as sent, before a URL parser resolves its dot segments', () => {
    expect(judgeRequestTarget('http://x/v1/claims/../claims')).to.deep.equal({ redirect: '/v1/claims' });
    expect(judgeRequestTarget('http://x/./health')).to.deep.equal({ redirect: '/health' });
    expect(judgeRequestTarget('http://x/%2e/chain/token/params?a=1')).to.deep.equal({ redirect: '/chain/token/params?a=1' });
  });

  it('refuses a path whose escapes are not UTF-8 text or decode to NUL', () => {
    for (const target of ['/v1/claims/kpt_%zz', '/chain/entity/%E0%A4%A', '/v1/entities/did:ixo:entity:%ED%A0%80', '/x/%FF', '/chain/entity/x%00y', 'http://h/api/ussd/debug/a%00b']) {
      expect(judgeRequestTarget(target), target).to.have.property('ok', false);
    }
    // In the query, each area reads the value itself (input.ts refuses NUL there).
    expect(judgeRequestTarget('/v1/claims/kpt_%C3%A9?x=%00')).to.deep.equal({ ok: true, url: '/v1/claims/kpt_%C3%A9?x=%00' });
  });

  it('refuses fragments, the asterisk-form and targets that are no path', () => {
    for (const target of ['/v1/claims#', '/v1/claims#x', '/v1/claims?a=1#b', 'http://h/v1/claims#', '*', 'v1/claims', 'http://[bad/x']) {
      expect(judgeRequestTarget(target), target).to.have.property('ok', false);
    }
  });

  it('redirects empty and dot segments (also percent-encoded dots) to the cleaned path, query kept', () => {
    expect(judgeRequestTarget('/v1//claims?x=1')).to.deep.equal({ redirect: '/v1/claims?x=1' });
    expect(judgeRequestTarget('//v1/claims')).to.deep.equal({ redirect: '/v1/claims' });
    expect(judgeRequestTarget('/v1/x/../claims')).to.deep.equal({ redirect: '/v1/claims' });
    expect(judgeRequestTarget('/v1/%2e%2E/v1/claims')).to.deep.equal({ redirect: '/v1/claims' });
    expect(judgeRequestTarget('/v1/./claims')).to.deep.equal({ redirect: '/v1/claims' });
  });

  it('writes the Location as Go does: each segment decoded and escaped again, an encoded slash kept encoded', () => {
    expect(judgeRequestTarget('/chain//entity/did%3Aixo%3Ax?a=%3A')).to.deep.equal({ redirect: '/chain/entity/did:ixo:x?a=%3A' });
    expect(judgeRequestTarget('/v1//entities/a%2fb%20c!')).to.deep.equal({ redirect: '/v1/entities/a%2Fb%20c%21' });
    expect(judgeRequestTarget('/v1/./x/%C3%A9%e9')).to.deep.equal({ redirect: '/v1/x/%C3%A9%E9' });
  });

  it('never redirects to another host: a backslash, a bad escape and an encoded slash stay escaped in the Location', () => {
    for (const [target, location] of [
      ['/\\evil.example\\%zz//x', '/%5Cevil.example%5C%25zz/x'],
      ['/./\\evil.example\\%', '/%5Cevil.example%5C%25'],
      ['/\\evil.example\\%C3//', '/%5Cevil.example%5C%C3/'],
      ['/%2F%2Fevil.example//', '/%2F%2Fevil.example/'],
      ['//%2Fevil', '/%2Fevil'],
      ['/..//evil.example', '/evil.example'],
    ]) {
      const verdict = judgeRequestTarget(target!);
      expect(verdict, target).to.deep.equal({ redirect: location });
      expect(new URL(location!, 'https://hearth.example').host, target).to.equal('hearth.example');
    }
  });

  it('cleans paths as Go does: a trailing slash stays, nothing climbs above the root', () => {
    expect(cleanPath('/a/b/')).to.equal('/a/b/');
    expect(cleanPath('/a//b//')).to.equal('/a/b/');
    expect(cleanPath('/a/b/..')).to.equal('/a');
    expect(cleanPath('/../../a')).to.equal('/a');
    expect(cleanPath('/..')).to.equal('/');
    expect(cleanPath('/a/.')).to.equal('/a');
  });
});

describe('operationResolver', () => {
  it('refuses at start-up a security requirement it could not enforce', () => {
    expect(() => operationResolver({ paths: { '/x': { get: { security: [{ oauth: [] }] } } } })).to.throw(/GET \/x: only/);
    expect(() => operationResolver({ paths: { '/x': { get: { security: [{ bearerAuth: [] }, { apiKey: [] }] } } } })).to.throw(/only/);
  });

  it('resolves HEAD as the GET it runs, a trailing slash as the path, and nothing else', async () => {
    const seen: (string | undefined)[] = [];
    const app = express();
    app.use(operationResolver({ paths: { '/v1/things/{id}': { get: { security: [{ bearerAuth: ['things:read'] }] } } } }));
    app.use((req, res) => {
      seen.push(operationOf(req) ? `${operationOf(req)!.template} ${String(operationOf(req)!.scopes)}` : undefined);
      res.end();
    });
    await request(app).head('/v1/things/1');
    await request(app).get('/v1/things/1/');
    await request(app).post('/v1/things/1');
    await request(app).get('/v1/things/1/more');
    await request(app).get('/V1/things/1');
    expect(seen).to.deep.equal(['/v1/things/{id} things:read', '/v1/things/{id} things:read', undefined, undefined, undefined]);
  });
});

describe('contractOnly', () => {
  it('runs the router only when the pipeline and the validator resolved the same operation', async () => {
    let reached = 0;
    const app = express();
    app.use(operationResolver({ paths: { '/x': { get: { security: [] } }, '/y': { get: { security: [] } } } }));
    // Stands in for the validator: X-Validated names the route it would have validated.
    app.use((req, _res, next) => {
      const validated = req.headers['x-validated'];
      if (typeof validated === 'string') (req as { openapi?: unknown }).openapi = { openApiRoute: validated };
      next();
    });
    app.use(contractOnly((_req, res) => {
      reached += 1;
      res.json({ reached: true });
    }));
    app.use((_req, res) => res.status(404).end());
    expect((await request(app).get('/x')).status, 'not validated').to.equal(404);
    expect((await request(app).get('/x').set('X-Validated', '/y')).status, 'validated as another operation').to.equal(404);
    expect((await request(app).get('/z').set('X-Validated', '/z')).status, 'not resolved').to.equal(404);
    expect(reached).to.equal(0);
    expect((await request(app).get('/x').set('X-Validated', '/x')).status).to.equal(200);
    expect(reached).to.equal(1);
  });
});

/** A concrete path for a documented template. */
const concrete = (template: string) =>
  template.replace('{did}', 'did:ixo:entity:00000000000000000000000000000001').replace(/\{[^}]+\}/g, 'x1');

/** Every odd spelling of `path` an attacker would try. */
function oddForms(path: string): string[] {
  const [, first, ...rest] = path.split('/');
  const tail = rest.length ? `/${rest.join('/')}` : '';
  return [
    `${path}#`,
    `${path}#frag`,
    `${path}?#`,
    `${path}%23`,
    `${path};x`,
    `${path}/`,
    `http://attacker.example${path}`,
    `http://attacker.example${path}#`,
    `//${path.slice(1)}`,
    `/${first}//${tail.slice(1)}`,
    `/${first}/.${tail}`,
    `/${first}/zz/..${tail}`,
    `/${first}/%2e%2e/${first}${tail}`,
    `/${first}%2F${tail.slice(1)}`,
    `/${first}%2f${tail.slice(1)}`,
    `/${first}\\${tail.slice(1)}`,
    `${path.toUpperCase()}`,
    '*',
  ];
}

forEachDatabase('no odd request-target reaches a handler unauthenticated', (t) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(t.db, { USSD_DEBUG_ENABLED: 'true', CHAIN_GATEWAY_AUTH: 'apikey' });
  });
  after(async () => server.stop());

  it('every authenticated operation of the contract, in every odd form and method, is refused', async function () {
    this.timeout(120_000);
    const doc = loadOpenApiDocument();
    const targets: { method: string; template: string }[] = [];
    for (const [template, item] of Object.entries<Record<string, { security?: unknown[] }>>(doc.paths ?? {})) {
      for (const [method, op] of Object.entries(item)) {
        if (typeof op !== 'object' || !('responses' in op)) continue;
        const security = op.security ?? doc.security ?? [];
        if (security.length) targets.push({ method: method.toUpperCase(), template });
      }
    }
    // The gated chain gateway (CHAIN_GATEWAY_AUTH=apikey) is held to the same rule.
    targets.push({ method: 'GET', template: '/chain/token/params' }, { method: 'GET', template: '/chain/claims/claims' });
    expect(targets.length).to.be.greaterThan(15);
    const failures: string[] = [];
    let sent = 0;
    for (const { method, template } of targets) {
      const path = concrete(template);
      for (const target of oddForms(path)) {
        for (const m of new Set([method, method === 'GET' ? 'HEAD' : method])) {
          const res = await rawRequest(server.baseUrl, m, target, m === 'POST' || m === 'PATCH' ? '{}' : undefined);
          sent += 1;
          const redirected = res.status === 301 || res.status === 308;
          if (redirected && typeof res.headers.location === 'string' && Object.hasOwn(judgeRequestTarget(res.headers.location), 'ok')) continue;
          if ([400, 401, 404, 405].includes(res.status)) continue;
          failures.push(`${m} ${target} -> ${res.status} ${res.body.slice(0, 80)}`);
        }
      }
    }
    expect(sent).to.be.greaterThan(400);
    expect(failures).to.deep.equal([]);
  });

  it('a fragment is a 400 in each area shape', async () => {
    const problem = await rawRequest(server.baseUrl, 'GET', '/v1/claims#');
    expect(problem.status).to.equal(400);
    expect(problem.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(JSON.parse(problem.body)).to.include({ type: 'urn:hearth:problem:invalid-request-target', status: 400 });
    const cosmos = await rawRequest(server.baseUrl, 'GET', '/chain/token/params#');
    expect(cosmos.status).to.equal(400);
    expect(JSON.parse(cosmos.body)).to.include({ code: 3 });
    const verify = await rawRequest(server.baseUrl, 'POST', '/v1/credentials/verify#', '{}');
    expect(verify.status).to.equal(400);
  });

  it('a path with an escaped NUL or escapes that are not UTF-8 is a 400 in each area shape, on either database', async () => {
    const key = await createTestKey(t.db, { scopes: ['twins:read', 'claims:read', 'ussd:debug', 'agent:read'] });
    for (const target of ['/v1/claims/kpt_%00', '/v1/entities/did:ixo:entity:%ED%A0%80', '/api/ussd/debug/a%00b', '/agent/tools/x%00/invoke']) {
      const res = await rawRequest(server.baseUrl, 'GET', target, undefined, key);
      expect(res.status, target).to.equal(400);
      expect(res.headers['content-type'], target).to.match(/^application\/problem\+json/);
      expect(JSON.parse(res.body), target).to.include({ type: 'urn:hearth:problem:invalid-request-target' });
    }
    for (const target of ['/chain/entity/x%00y', '/chain/claims/claim/%00', '/chain/entity/%FF/metadata']) {
      const res = await rawRequest(server.baseUrl, 'GET', target);
      expect(res.status, target).to.equal(400);
      expect(JSON.parse(res.body), target).to.include({ code: 3 });
    }
  });

  it("a request Node's HTTP parser cannot read is answered problem+json (not a bare status line), and the connection closes", async () => {
    const cases: [string, number, string][] = [
      ['GET v1/claims HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'unreadable-request'],
      ['POST /api/ussd HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'unreadable-request'],
      [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'request-header-fields-too-large'],
    ];
    for (const [bytes, status, type] of cases) {
      const answer = await rawExchange(server.baseUrl, bytes);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head, bytes.slice(0, 40)).to.match(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(head).to.include('Content-Type: application/problem+json').and.include('Connection: close');
      expect(JSON.parse(body!)).to.include({ type: `urn:hearth:problem:${type}`, status });
    }
  });

  it('a repeated Host or Authorization header is a 400 in each area shape (RFC 9112 section 3.2), before the key is read', async () => {
    const key = await createTestKey(t.db);
    const twice = (path: string, header: string, extra = '') =>
      rawExchange(server.baseUrl, `GET ${path} HTTP/1.1\r\nHost: x\r\n${header}\r\n${header}\r\n${extra}Connection: close\r\n\r\n`);
    const problem = (await twice('/v1/claims', `Authorization: Bearer ${key}`)).split('\r\n\r\n');
    expect(problem[0]).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(problem[1]!)).to.include({ type: 'urn:hearth:problem:repeated-header', detail: 'The request must carry one Authorization header, not several.' });
    const host = (await twice('/chain/token/params', 'Host: y', `Authorization: Bearer ${key}\r\n`)).split('\r\n\r\n');
    expect(host[0]).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(host[1]!)).to.include({ code: 3 });
    // One of each is fine.
    expect(await rawExchange(server.baseUrl, `GET /v1/claims HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`)).to.match(/^HTTP\/1\.1 200 /);
  });

  it('an HTTP/1.1 request without Host (RFC 9112 section 3.2), with an expectation other than 100-continue (RFC 9110 section 10.1.1), a transfer coding other than chunked or a second Content-Type is answered in its area shape; CONNECT is 501 problem+json', async () => {
    const key = await createTestKey(t.db);
    const split = (answer: string) => answer.split('\r\n\r\n') as [string, string];
    let [head, body] = split(await rawExchange(server.baseUrl, `GET /v1/claims HTTP/1.1\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`));
    expect(head).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body)).to.include({ type: 'urn:hearth:problem:missing-host' });
    [head, body] = split(await rawExchange(server.baseUrl, 'GET /chain/token/params HTTP/1.1\r\nConnection: close\r\n\r\n'));
    expect(head).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body)).to.include({ code: 3 });
    // HTTP/1.0 has no Host to require.
    expect(await rawExchange(server.baseUrl, 'GET /health HTTP/1.0\r\n\r\n')).to.match(/^HTTP\/1\.1 200 /);
    [head, body] = split(await rawExchange(server.baseUrl, `GET /v1/claims HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`));
    expect(head).to.match(/^HTTP\/1\.1 417 /);
    expect(JSON.parse(body)).to.include({ type: 'urn:hearth:problem:expectation-failed', status: 417 });
    const hop = JSON.stringify({ sessionId: 'expect-1', serviceCode: '*384#', phoneNumber: '+254712345678', text: '' });
    [, body] = split(await rawExchange(server.baseUrl, `POST /api/ussd HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: ${hop.length}\r\nConnection: close\r\n\r\n${hop}`));
    expect(body).to.equal('END Invalid input. Please try again.');
    // A transfer coding nothing here undoes (RFC 9112 section 6.1), and a second Content-Type.
    [head, body] = split(await rawExchange(server.baseUrl, `POST /v1/collections HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n`));
    expect(head).to.match(/^HTTP\/1\.1 501 /);
    expect(JSON.parse(body)).to.include({ type: 'urn:hearth:problem:transfer-coding-unsupported' });
    [head, body] = split(await rawExchange(server.baseUrl, `POST /v1/collections HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`));
    expect(head).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body)).to.include({ type: 'urn:hearth:problem:repeated-header', detail: 'The request must carry one Content-Type header, not several.' });
    [head, body] = split(await rawExchange(server.baseUrl, 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n'));
    expect(head).to.match(/^HTTP\/1\.1 501 /).and.include('Connection: close');
    expect(JSON.parse(body)).to.include({ status: 501 });
  });

  it('a USSD hop with a fragment is END Invalid input and stores no session', async () => {
    const hop = JSON.stringify({ sessionId: 'frag-1', serviceCode: '*384#', phoneNumber: 'not-a-phone', text: '' });
    const res = await rawRequest(server.baseUrl, 'POST', '/api/ussd#', hop);
    expect(res.status).to.equal(200);
    expect(res.body).to.equal('END Invalid input. Please try again.');
    const rows = await t.db('ussd_sessions').where('id', 'frag-1');
    expect(rows).to.have.length(0);
  });

  it('an absolute-form target is served as the path it names, authenticated as that path', async () => {
    const anonymous = await rawRequest(server.baseUrl, 'GET', 'http://attacker.example/v1/claims');
    expect(anonymous.status).to.equal(401);
    const health = await rawRequest(server.baseUrl, 'GET', 'http://attacker.example/health');
    expect(health.status).to.equal(200);
    expect(JSON.parse(health.body)).to.include({ status: 'ok' });
  });

  it('an absolute-form target with dot segments is redirected as its origin-form is', async () => {
    const res = await rawRequest(server.baseUrl, 'GET', 'http://x/v1/claims/../claims');
    expect(res.status).to.equal(301);
    expect(res.headers.location).to.equal('/v1/claims');
  });

  it('a dot or empty segment is redirected to the cleaned path: 301 for GET, 308 for other methods', async () => {
    const get = await rawRequest(server.baseUrl, 'GET', '/v1/x/../claims?limit=1');
    expect(get.status).to.equal(301);
    expect(get.headers.location).to.equal('/v1/claims?limit=1');
    const post = await rawRequest(server.baseUrl, 'POST', '//api/ussd', '{}');
    expect(post.status).to.equal(308);
    expect(post.headers.location).to.equal('/api/ussd');
  });
});
