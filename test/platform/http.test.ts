import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { expect } from 'chai';
import { pino } from 'pino';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseDid } from 'did-resolver';
import { contractSchema, loadOpenApiDocument } from '../../src/platform/contract.ts';
import { DID_PATTERN, didSyntaxError, isDid } from '../../src/platform/did.ts';
import { conflictWith, DomainError, forbiddenAction, invalidInput, notFoundError } from '../../src/platform/domain-errors.ts';
import { AppError, errorHandler, notFoundHandler, toAppError } from '../../src/platform/http/errors.ts';
import { grpcCodeForHttp } from '../../src/chain/gateway/errors.ts';
import { areaShapes } from '../helpers/area-shapes.ts';
import { operationOf, operationResolver, requestPointer } from '../../src/platform/http/operations.ts';
import { unstorableValue } from '../../src/platform/http/input.ts';
import { jsonPointer } from '../../src/platform/json-pointer.ts';
import { createLogger, maskPhone, requestLogger } from '../../src/platform/logging.ts';
import { requestContext } from '../../src/platform/http/request-context.ts';
import { listen } from '../../src/platform/server.ts';
import { createTestDatabase, forEachDatabase, type TestDatabase } from '../helpers/databases.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

describe('error module renders each area shape', () => {
  const app = express();
  app.use(express.json({ limit: '1kb' }));
  app.post('/api/ussd', () => {
    throw new AppError(400, 'Bad Request');
  });
  app.get('/api/ussd/crash', () => {
    throw new Error('boom');
  });
  app.get('/chain/x', () => {
    throw new AppError(503, 'Service Unavailable', { detail: 'upstream down' });
  });
  app.post('/v1/x', (_req, res) => {
    res.json({});
  });
  app.get('/v1/conflict', () => {
    throw new AppError(409, 'Conflict', { detail: 'total differs', errors: [{ pointer: '/body/total', message: 'differs', rule: 'total-sum' }] });
  });
  app.use(notFoundHandler);
  app.use(errorHandler(pino({ level: 'silent' }), { rendererFor: areaShapes }));

  it('USSD: a client error is HTTP 200 text/plain END Invalid input', async () => {
    const res = await request(app).post('/api/ussd').send({});
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/plain/);
    expect(res.text).to.equal('END Invalid input. Please try again.');
  });

  it('USSD: malformed JSON is END Invalid input too', async () => {
    const res = await request(app).post('/api/ussd').set('Content-Type', 'application/json').send('{"sessionId":');
    expect(res.text).to.equal('END Invalid input. Please try again.');
  });

  it('cosmos: {code,message,details} with the gRPC code', async () => {
    const res = await request(app).get('/chain/x');
    expect(res.status).to.equal(503);
    expect(res.body).to.deep.equal({ code: 14, message: 'upstream down', details: [] });
    const nf = await request(app).get('/chain/unknown');
    expect(nf.status).to.equal(404);
    expect(nf.body.code).to.equal(5);
  });

  it('problem+json with field errors naming pointer and rule', async () => {
    const res = await request(app).get('/v1/conflict');
    expect(res.status).to.equal(409);
    expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(res.body).to.deep.equal({
      type: 'urn:hearth:problem:conflict',
      title: 'Conflict',
      status: 409,
      detail: 'total differs',
      instance: '/v1/conflict',
      errors: [{ pointer: '/body/total', message: 'differs', rule: 'total-sum' }],
    });
  });

  it('413 for a body over the limit, 400 for malformed JSON', async () => {
    const big = await request(app).post('/v1/x').send({ a: 'x'.repeat(2000) });
    expect(big.status).to.equal(413);
    const bad = await request(app).post('/v1/x').set('Content-Type', 'application/json').send('{');
    expect(bad.status).to.equal(400);
    expect(bad.body.type).to.equal('urn:hearth:problem:malformed-body');
    expect(bad.body.detail).to.equal('The request body is not valid JSON.');
    // JSON, but not an object: said as such, not as broken JSON.
    const scalar = await request(app).post('/v1/x').set('Content-Type', 'application/json').send('null');
    expect(scalar.status).to.equal(400);
    expect(scalar.body.detail).to.equal('The request body must be a JSON object.');
  });

  it("body-parser's other refusals get the status's standard title and a type of their own", async () => {
    const res = await request(app).post('/v1/x').set('Content-Type', 'application/json; charset=latin1').send('{}');
    expect(res.status).to.equal(415);
    expect(res.body).to.include({ title: 'Unsupported Media Type', type: 'urn:hearth:problem:charset-unsupported' });
    expect(res.body.detail).to.match(/unsupported charset/);
  });

  it('an unexpected error is 500 without internals, or the USSD unavailable reply', async () => {
    const res = await request(app).get('/api/ussd/crash');
    expect(res.status).to.equal(500);
    expect(JSON.stringify(res.body)).not.to.include('boom');
  });

  it('maps HTTP statuses to gRPC codes', () => {
    expect([400, 401, 403, 404, 409, 429, 501, 503, 504, 500].map(grpcCodeForHttp)).to.deep.equal([3, 16, 7, 5, 10, 8, 12, 14, 4, 13]);
  });
});

describe('use-case refusals at the HTTP edge', () => {
  const contract = loadOpenApiDocument();
  /** The operation the pipeline resolves for a request, as operationResolver records it. */
  function resolve(method: string, path: string) {
    const req = { method, path } as express.Request;
    operationResolver(contract)(req, {} as express.Response, () => undefined);
    return operationOf(req);
  }

  it('points an issue at the parameter its path names, else into the body', () => {
    const list = resolve('GET', '/v1/claims');
    expect(requestPointer(list, ['cursor'])).to.equal('/query/cursor');
    const submit = resolve('POST', '/v1/claims');
    expect(requestPointer(submit, ['Idempotency-Key'])).to.equal('/headers/idempotency-key');
    expect(requestPointer(submit, ['fuelMeasurements', 'dailyLogs', 2])).to.equal('/body/fuelMeasurements/dailyLogs/2');
    expect(requestPointer(resolve('PATCH', '/v1/entities/did:ixo:entity:abc'), ['did'])).to.equal('/params/did');
    expect(requestPointer(resolve('GET', '/user-preferences'), ['roomId'])).to.equal('/query/roomId');
    expect(requestPointer(undefined, ['a/b'])).to.equal('/body/a~1b');
  });

  it('no operation has a body member named like one of its parameters, so every issue path has one place', () => {
    const schemas = contract.components!.schemas!;
    for (const [template, item] of Object.entries<Record<string, any>>(contract.paths!)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const ref: string | undefined = op?.requestBody?.content?.['application/json']?.schema?.$ref;
        if (!ref) continue;
        const members = Object.keys(schemas[ref.split('/').pop()!]?.properties ?? {});
        const resolved = resolve(method.toUpperCase(), template.replace(/\{[^}]+\}/g, 'x'));
        for (const name of resolved!.parameters.keys()) expect(members, `${method} ${template}`).to.not.include(name);
      }
    }
  });

  it('renders each kind of refusal with its status, and lists the issues in the detail when asked', () => {
    const invalid = toAppError(invalidInput('The body is not valid', [{ path: ['total'], message: 'is too big', rule: 'max' }]), (p) => `/body${jsonPointer(...p)}`);
    expect(invalid).to.include({ status: 400, title: 'Bad Request', detail: 'The body is not valid: /body/total is too big', type: 'validation-error' });
    expect(invalid.errors).to.deep.equal([{ pointer: '/body/total', message: 'is too big', rule: 'max' }]);
    expect(toAppError(new DomainError('unprocessable', 'key reused', { type: 'idempotency-key-reuse' }))).to.include({ status: 422, title: 'Unprocessable Content', detail: 'key reused' });
    expect(toAppError(notFoundError('No claim x.'))).to.include({ status: 404, detail: 'No claim x.' });
    expect(toAppError(forbiddenAction('Not yours.'))).to.include({ status: 403 });
    expect(toAppError(conflictWith('Taken.', [{ path: ['id'], message: 'is taken' }]))).to.deep.include({ status: 409, errors: [{ pointer: '/body/id', message: 'is taken' }] });
  });
});

describe('request values that cannot be stored', () => {
  it('RFC 6901 pointers escape ~ and /', () => {
    expect(jsonPointer('body', 'a/b', 'c~d', 0)).to.equal('/body/a~1b/c~0d/0');
  });

  it('finds the first NUL or lone-surrogate string or key, non-finite number, or over-deep nesting', () => {
    expect(unstorableValue({ a: [1, 'ok', { b: null, c: true }] })).to.equal(undefined);
    expect(unstorableValue({ a: [1, 'x\u0000'] }, ['body'])).to.deep.include({ pointer: '/body/a/1', rule: 'no-nul-character' });
    expect(unstorableValue({ 'k\u0000': 1 }, ['body'])).to.deep.include({ pointer: '/body/k\u0000', rule: 'no-nul-character' });
    expect(unstorableValue(JSON.parse('{"n":[1e400]}'), ['body'])).to.deep.include({ pointer: '/body/n/0', rule: 'finite-number' });
    // The path walked into a clean member is left again before the next one.
    expect(unstorableValue({ a: { b: [1, { c: 2 }] }, d: 'x\u0000' }, ['body'])).to.deep.include({ pointer: '/body/d', rule: 'no-nul-character' });
    expect(unstorableValue(JSON.parse('{"a":["x\\ud800y"]}'), ['body'])).to.deep.include({ pointer: '/body/a/0', rule: 'no-lone-surrogate' });
    expect(unstorableValue(JSON.parse('{"a":"\\udc00"}'), ['body'])).to.deep.include({ pointer: '/body/a', rule: 'no-lone-surrogate' });
    expect(unstorableValue(JSON.parse('{"k\\udbff":1}'), ['body'])).to.deep.include({ pointer: '/body/k\udbff', rule: 'no-lone-surrogate' });
    // A surrogate pair is one character (😀), and fine.
    expect(unstorableValue(JSON.parse('{"a":"\\ud83d\\ude00"}'), ['body'])).to.equal(undefined);
    expect(unstorableValue(JSON.parse('['.repeat(70) + ']'.repeat(70)))).to.deep.include({ rule: 'max-depth' });
    expect(unstorableValue(JSON.parse('['.repeat(60) + ']'.repeat(60)))).to.equal(undefined);
  });
});

describe('JSON nested thousands of levels deep', () => {
  let db: TestDatabase & { drop(): Promise<void> };
  let server: TestServer;
  before(async () => {
    db = await createTestDatabase('sqlite');
    server = await startTestServer(db.db);
  });
  after(async () => {
    await server.stop();
    await db.drop();
  });

  // About 12 kB: within BODY_LIMIT, and deep enough that a recursive reader overflows the stack.
  const deep = (levels: number, lead = '') => `{${lead}"x":${'['.repeat(levels)}${']'.repeat(levels)}}`;
  const maxDepth = { pointer: '/body', message: 'is nested more than 64 levels deep', rule: 'max-depth' };

  it("is a declared 400 max-depth on every JSON route, in its area's shape; 64 levels pass the check", async () => {
    const key = await createTestKey(db.db);
    const post = (path: string, body: string) =>
      fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
    for (const [path, template] of [
      ['/v1/collections', '/v1/collections'],
      ['/v1/claims', '/v1/claims'],
      ['/v1/credentials/verify', '/v1/credentials/verify'],
      ['/api/ussd/events', '/api/ussd/events'],
      ['/agent/context', '/agent/context'],
      ['/agent/tools/set_user_preferences/invoke', '/agent/tools/{name}/invoke'],
    ]) {
      const res = await post(path!, deep(6000));
      const body = await res.json();
      expect(res.status, path).to.equal(400);
      expect(res.headers.get('content-type'), path).to.match(/^application\/problem\+json/);
      expect(body.errors, path).to.deep.equal([maxDepth]);
      expectContractResponse('post', template!, { status: res.status, headers: res.headers, body });
    }
    // The USSD gateway reads only its END reply.
    const ussd = await post('/api/ussd', deep(6000, '"sessionId":"deep","serviceCode":"*384#","phoneNumber":"+254712345678","text":"",'));
    expect(ussd.status).to.equal(200);
    expect(await ussd.text()).to.equal('END Invalid input. Please try again.');
    // MCP: an invalid request in JSON-RPC's shape.
    const mcp = await post('/agent/mcp', deep(6000, '"jsonrpc":"2.0","id":1,"method":"ping",'));
    expect(mcp.status).to.equal(400);
    expect((await mcp.json()).error).to.include({ code: -32600 });
    // The bound is the one every value has: 63 levels under the top object are refused for what they hold, not their depth.
    const shallow = await post('/v1/collections', deep(63));
    expect(shallow.status).to.equal(400);
    expect((await shallow.json()).errors.map((e: { rule: string }) => e.rule)).to.not.include('max-depth');
  });
});

describe('DID syntax', () => {
  it('accepts DIDs and rejects DID URLs and garbage', () => {
    for (const d of ['did:ixo:entity:0123456789abcdef0123456789abcdef', 'did:key:z6MkhaXgBZD', 'did:web:example.com%3A8443', 'did:ixo:a:b:c']) {
      expect(isDid(d), d).to.equal(true);
    }
    expect(didSyntaxError('did:ixo:household/123')).to.match(/DID URL/);
    expect(didSyntaxError('did:ixo:abc#key-1')).to.match(/DID URL/);
    for (const d of ['did:IXO:abc', 'did:ixo:', 'ixo:abc', 'did:ixo:abc:', 'did:ixo:a b']) {
      expect(isDid(d), d).to.equal(false);
    }
  });

  it('agrees with an independent DID parser (did-resolver, after DID Core\'s ABNF): a DID is what it parses whole', () => {
    const cases = [
      'did:ixo:entity:0123456789abcdef0123456789abcdef', 'did:key:z6MkhaXgBZD', 'did:web:example.com%3A8443', 'did:ixo:a:b:c', 'did:ixo::a',
      'did:ixo:a_b-c.d', 'did:ixo:a%20b', 'did:1:x', 'did:ixo:a:', 'did:IXO:a', 'did:ixo:%zz', 'did:ixo:%2', 'did:ixo:', 'did::x', 'DID:ixo:a',
      'ixo:abc', 'did:ixo:a b', 'did:ixo:a/b', 'did:ixo:a?x=1', 'did:ixo:a#f', 'did:ixo:a;p=1', 'did:ixo:ä',
    ];
    for (const d of cases) expect(isDid(d), d).to.equal(parseDid(d)?.did === d);
  });

  it('gives each DID one spelling (RFC 3986 section 6.2.2): no escape of a character that may stand as itself, no lower-case escape', () => {
    for (const d of ['did:ixo:entity:abc%63', 'did:ixo:entity:%31', 'did:ixo:a%2Db', 'did:ixo:a%5F', 'did:ixo:%2E', 'did:web:example.com%3a8443', 'did:ixo:a%c3%a4']) {
      expect(isDid(d), d).to.equal(false);
      expect(didSyntaxError(d), d).to.match(/one spelling/);
    }
    for (const d of ['did:ixo:a%7Eb', 'did:web:example.com%3A8443', 'did:ixo:%C3%A4', 'did:ixo:a%20b', 'did:ixo:%2F', 'did:ixo:%40', 'did:ixo:%60']) {
      expect(isDid(d), d).to.equal(true);
    }
  });

  it('is the contract\'s Did pattern, which a partner\'s own validator applies alike', () => {
    const contract = loadOpenApiDocument();
    expect(contractSchema(contract, 'Did').pattern).to.equal(DID_PATTERN);
    // A partner validating against the published document, with no code of ours.
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(contract, 'openapi.json');
    const partnerIsDid = ajv.compile({ $ref: 'openapi.json#/components/schemas/Did' });
    for (const d of ['did:ixo:entity:0123456789abcdef0123456789abcdef', 'did:web:example.com%3A8443', 'did:ixo:household/123', 'did:ixo:abc#key-1', 'did:IXO:abc', 'did:ixo:abc:', 'did:ixo:entity:abc%63', 'did:ixo:a%2f']) {
      expect(partnerIsDid(d), d).to.equal(isDid(d));
    }
  });
});

/** A log destination keeping its lines; it emits 'line' for each, so a test can wait for one. */
function logSink() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      this.emit('line');
      cb();
    },
  });
  return { lines, sink };
}

describe('logging', () => {
  it('redacts the row values PostgreSQL puts in an error detail', () => {
    let out = '';
    const logger = createLogger({ LOG_LEVEL: 'error' }, new Writable({ write: (c, _e, cb) => ((out += String(c)), cb()) }));
    const err = Object.assign(new Error('duplicate key value violates unique constraint'), { detail: 'Key (phone_number)=(+254712345678) already exists.' });
    logger.error({ err: Object.assign(new Error('wrapped', { cause: err }), { detail: 'Failing row contains (Jane Doe).' }) }, 'request failed');
    expect(out).to.include('request failed');
    for (const secret of ['254712345678', 'Jane Doe']) expect(out).to.not.include(secret);
  });

  it('logs a failure (5xx) at error level, but not a 501 for what Hearth does not serve', async () => {
    const { lines, sink } = logSink();
    const app = express();
    app.get('/unserved', () => {
      throw new AppError(501, 'Not Implemented');
    });
    app.get('/failing', () => {
      throw new Error('boom');
    });
    app.use(errorHandler(pino({ level: 'info' }, sink)));
    expect((await request(app).get('/unserved')).status).to.equal(501);
    expect(lines).to.deep.equal([]);
    expect((await request(app).get('/failing')).status).to.equal(500);
    expect(lines).to.have.length(1);
    expect(JSON.parse(lines[0]!)).to.include({ level: 50, msg: 'request failed' });
  });

  it('masks phone numbers', () => {
    expect(maskPhone('+254712345678')).to.equal('+254*******78');
    expect(maskPhone('garbage')).to.equal('[phone]');
  });

  it('request logs carry no authorization header, query string or body', async () => {
    const { lines, sink } = logSink();
    const app = express();
    app.use(requestLogger(pino({ level: 'info' }, sink)));
    app.post('/x', (_req, res) => {
      res.send('ok');
    });
    await request(app).post('/x?phoneNumber=%2B254712345678').set('Authorization', 'Bearer hth_secret').send({ pin: '12345' });
    const log = lines.join('');
    expect(log).to.include('"path":"/x"');
    for (const secret of ['hth_secret', '254712345678', '12345']) expect(log).not.to.include(secret);
  });

  it('one structured line per request, at a level that follows the status', async () => {
    const { lines, sink } = logSink();
    const app = express();
    app.use(requestContext);
    app.use(requestLogger(pino({ level: 'info' }, sink)));
    app.get('/ok', (_req, res) => {
      res.send('ok');
    });
    app.get('/missing', (_req, res) => {
      res.status(404).send('no');
    });
    app.get('/broken', (_req, res) => {
      res.status(500).send('no');
    });
    app.get('/unserved', (_req, res) => {
      res.status(501).send('no');
    });
    const answers = [];
    for (const path of ['/ok', '/missing', '/broken', '/unserved']) answers.push(await request(app).get(path));
    await new Promise((r) => setImmediate(r));
    const entries = lines.map((l) => JSON.parse(l));
    // each line carries the request and trace ids its answer was sent with
    expect(entries.map((e) => e.req.id)).to.deep.equal(answers.map((a) => a.headers['x-request-id']));
    expect(entries.map((e) => e.req.traceId)).to.deep.equal(answers.map((a) => String(a.headers.traceparent).split('-')[1]));
    expect(entries.map((e) => [e.level, e.req.path, e.res.statusCode, e.msg])).to.deep.equal([
      [30, '/ok', 200, 'request completed'],
      [40, '/missing', 404, 'request completed'],
      [50, '/broken', 500, 'request completed'],
      // a route area C's gateway does not serve: the caller's miss
      [40, '/unserved', 501, 'request completed'],
    ]);
    expect(entries[0].responseTime).to.be.a('number');
    expect(new Set(entries.map((e) => e.req.id)).size).to.equal(4);
  });

  it('a request the client gives up on is a warning (request aborted), not an error', async () => {
    const { lines, sink } = logSink();
    const app = express();
    app.use(requestContext);
    app.use(requestLogger(pino({ level: 'info' }, sink)));
    let arrived!: () => void;
    const arrival = new Promise<void>((r) => (arrived = r));
    app.get('/slow', (_req, _res) => arrived());
    const running = await listen(app, 0, '127.0.0.1', 1000);
    try {
      const client = new AbortController();
      const call = fetch(`http://127.0.0.1:${running.port}/slow`, { signal: client.signal }).catch(() => undefined);
      await arrival;
      client.abort();
      await call;
      // The server logs once it sees the connection close, after the client's abort has settled.
      if (!lines.length) await once(sink, 'line');
      expect(lines.map((l) => JSON.parse(l)).map((e) => [e.level, e.msg])).to.deep.equal([[40, 'request aborted']]);
    } finally {
      running.server.closeAllConnections();
      await running.stop();
    }
  });

  it('logs nothing per request when the level is silent', async () => {
    const { lines, sink } = logSink();
    const app = express();
    app.use(requestLogger(pino({ level: 'silent' }, sink)));
    app.get('/ok', (_req, res) => {
      res.send('ok');
    });
    await request(app).get('/ok');
    expect(lines).to.deep.equal([]);
  });
});

describe('graceful shutdown', () => {
  it('finishes an in-flight request, then refuses new connections', async () => {
    const app = express();
    // The request arrives, the server starts stopping, and only then is the answer sent.
    let arrive!: () => void;
    let release!: () => void;
    const arrived = new Promise<void>((r) => (arrive = r));
    const released = new Promise<void>((r) => (release = r));
    app.get('/slow', async (_req, res) => {
      arrive();
      await released;
      res.send('done');
    });
    const running = await listen(app, 0, '127.0.0.1', 5000);
    const url = `http://127.0.0.1:${running.port}/slow`;
    const inFlight = fetch(url).then((r) => r.text());
    await arrived;
    const stopped = running.stop();
    release();
    expect(await inFlight).to.equal('done');
    await stopped;
    let refused = false;
    await fetch(url).catch(() => {
      refused = true;
    });
    expect(refused).to.equal(true);
  });

  it('a request still running at the shutdown timeout is cut, and the cut is told first', async () => {
    const app = express();
    let arrived!: () => void;
    const arrival = new Promise<void>((r) => (arrived = r));
    app.get('/stuck', () => arrived());
    const running = await listen(app, 0, '127.0.0.1', 200);
    const call = fetch(`http://127.0.0.1:${running.port}/stuck`).then(
      () => 'answered',
      () => 'cut',
    );
    await arrival;
    const told: number[] = [];
    await running.stop((open) => told.push(open));
    expect(await call).to.equal('cut');
    expect(told).to.deep.equal([1]);
  });

  it('the process exits 0 on SIGTERM after closing the database', async function () {
    this.timeout(30_000);
    const dir = mkdtempSync(join(tmpdir(), 'hearth-proc-'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start'], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, GRPC_PORT: '0', LOG_LEVEL: 'info', DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start: ${out}`)), 20_000);
      child.stdout.on('data', () => {
        if (out.includes('Hearth is listening')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    child.kill('SIGTERM');
    const code = await new Promise((r) => child.on('exit', r));
    rmSync(dir, { recursive: true, force: true });
    expect(code).to.equal(0);
    expect(out).to.include('shutdown complete');
  });
});

forEachDatabase('app assembly', (t) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(t.db, { BODY_LIMIT: '1kb' });
  });
  after(() => server.stop());

  it('an unknown route is problem+json 404', async () => {
    const res = await fetch(`${server.baseUrl}/v1/nothing-here`);
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  });

  it('a documented path asked with another method is 405 with Allow', async () => {
    const res = await fetch(`${server.baseUrl}/health`, { method: 'DELETE' });
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('GET, HEAD');
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    const templated = await fetch(`${server.baseUrl}/v1/claims/kpt_x`, { method: 'PUT' });
    expect(templated.status).to.equal(405);
    expect(templated.headers.get('allow')).to.equal('GET, HEAD');
    // OPTIONS is no exception (Express would answer it with a 200 of its own).
    for (const path of ['/v1/claims', '/health', '/agent/tools', '/api/ussd']) {
      const options = await fetch(`${server.baseUrl}${path}`, { method: 'OPTIONS' });
      expect(options.status, path).to.equal(405);
      expect(options.headers.get('content-type'), path).to.match(path === '/api/ussd' ? /^text\/plain/ : /^application\/problem\+json/);
    }
    expect((await fetch(`${server.baseUrl}/v1/claims`, { method: 'OPTIONS' })).headers.get('allow')).to.equal('GET, HEAD, POST');
  });

  it('JSON answers carry no generated ETag, so no conditional request turns into a 304', async () => {
    const res = await fetch(`${server.baseUrl}/`, { headers: { 'if-none-match': 'W/"anything"' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('etag')).to.equal(null);
  });

  it('a body without a Content-Type is a 415 (after authentication), never silently dropped', async () => {
    const key = await createTestKey(t.db);
    // fetch would add text/plain to a string body: send it as a client without the header does.
    const postBare = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const body = JSON.stringify({ roomId: 'kitchen' });
        const req = httpRequest(`${server.baseUrl}/agent/context`, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, body: text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    expect((await postBare({})).status).to.equal(401);
    const bare = await postBare({ authorization: `Bearer ${key}` });
    expect(bare.status).to.equal(415);
    expect(JSON.parse(bare.body)).to.include({ type: 'urn:hearth:problem:content-type-missing', title: 'Unsupported Media Type' });
  });

  it('paths are case-sensitive: another spelling of a route is 404, never an unvalidated route', async () => {
    const res = await fetch(`${server.baseUrl}/V1/claims`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).to.equal(404);
    expect((await fetch(`${server.baseUrl}/Health`)).status).to.equal(404);
  });

  it('every router matches case-sensitively: no other spelling reaches a handler past the validator', async () => {
    const key = await createTestKey(t.db);
    for (const path of ['/AGENT/PLUGINS', '/agent/PLUGINS', '/Agent/Tools', '/User-Preferences', '/v1/CLAIMS', '/api/USSD/sessions/x', '/HEALTH']) {
      const res = await fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status, path).to.equal(404);
      expect(res.headers.get('content-type'), path).to.match(/^application\/problem\+json/);
    }
  });

  it('a request without Content-Type is told so; an unknown query parameter names the rule', async () => {
    const key = await createTestKey(t.db);
    const bare = await fetch(`${server.baseUrl}/v1/claims`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(bare.status).to.equal(415);
    expect(await bare.json()).to.include({ title: 'Unsupported Media Type', detail: 'unsupported media type: the request has no Content-Type' });
    const unknown = await fetch(`${server.baseUrl}/v1/claims?foo=1`, { headers: { authorization: `Bearer ${key}` } });
    expect(unknown.status).to.equal(400);
    expect((await unknown.json()).errors[0]).to.include({ pointer: '/query/foo', rule: 'contract' });
  });

  it('a caller without a key hears 401 before any complaint about its body; with one, the body refusal', async () => {
    const key = await createTestKey(t.db);
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.baseUrl}/v1/claims`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const big = JSON.stringify({ type: 'KPTClaim', pad: 'x'.repeat(2000) });
    for (const body of ['{', big, '{"type":"a\\u0000b"}', '{"n":1e400}']) expect((await post(body)).status, body).to.equal(401);
    const malformed = await post('{', { authorization: `Bearer ${key}` });
    expect(malformed.status).to.equal(400);
    expect(await malformed.json()).to.include({ type: 'urn:hearth:problem:malformed-body' });
    expect((await post(big, { authorization: `Bearer ${key}` })).status).to.equal(413);
    // Routes without authentication report the body at once, as before.
    const ussd = await fetch(`${server.baseUrl}/api/ussd`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(await ussd.text()).to.equal('END Invalid input. Please try again.');
  });

  it('HEAD is authenticated and validated as the GET it runs', async () => {
    const anonymous = await fetch(`${server.baseUrl}/agent/plugins`, { method: 'HEAD' });
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers.get('www-authenticate')).to.match(/^Bearer/);
    expect((await fetch(`${server.baseUrl}/v1/entities/did:ixo:entity:00000000000000000000000000000099`, { method: 'HEAD' })).status).to.equal(401);
    const key = await createTestKey(t.db);
    const auth = { authorization: `Bearer ${key}` };
    expect((await fetch(`${server.baseUrl}/agent/plugins`, { method: 'HEAD', headers: auth })).status).to.equal(200);
    expect((await fetch(`${server.baseUrl}/v1/claims?limit=abc`, { method: 'HEAD', headers: auth })).status).to.equal(400);
    expect((await fetch(`${server.baseUrl}/health`, { method: 'HEAD' })).status).to.equal(200);
    expect((await fetch(`${server.baseUrl}/v1/claims`, { method: 'HEAD', headers: auth })).status).to.equal(200);
  });

  it('a NUL character or a number JSON cannot hold is a 400 naming it, in every area, and nothing is stored', async () => {
    const key = await createTestKey(t.db);
    const post = (path: string, body: string) =>
      fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
    const collection = await post('/v1/collections', '{"id":"nul-test","name":"a\\u0000b"}');
    expect(collection.status).to.equal(400);
    expect((await collection.json()).errors).to.deep.equal([{ pointer: '/body/name', message: 'must not contain the NUL character (U+0000)', rule: 'no-nul-character' }]);
    expect(await t.db('kpt_collections').where('id', 'nul-test').first()).to.equal(undefined);
    const entity = await post('/v1/entities', '{"type":"Device","properties":{"a/b":{"z":-1e999}}}');
    expect(entity.status).to.equal(400);
    expect((await entity.json()).errors).to.deep.equal([{ pointer: '/body/properties/a~1b/z', message: 'must be a finite number', rule: 'finite-number' }]);
    const query = await fetch(`${server.baseUrl}/user-preferences?roomId=a%00b`, { headers: { authorization: `Bearer ${key}` } });
    expect(query.status).to.equal(400);
    expect((await query.json()).errors[0]).to.include({ pointer: '/query/roomId', rule: 'no-nul-character' });
    const ussd = await post('/api/ussd', JSON.stringify({ sessionId: 'nul-test', serviceCode: '*384#', phoneNumber: '+254712345678', text: '1\u0000' }));
    expect(await ussd.text()).to.equal('END Invalid input. Please try again.');
    expect(await t.db('ussd_sessions').where('id', 'nul-test').first()).to.equal(undefined);
    const chain = await fetch(`${server.baseUrl}/chain/entity?pagination.key=%00`);
    expect(chain.status).to.equal(400);
    expect(await chain.json()).to.include({ code: 3 });
    // A rerouted form POST is a query too.
    const form = await fetch(`${server.baseUrl}/chain/claims/claims`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'pagination.limit=1&x=%00' });
    expect(form.status).to.equal(400);
    expect(await form.json()).to.include({ code: 3 });
  });

  it('a JSON body that is not UTF-8 (RFC 8259 §8.1) is a 400 naming it, in every area, and nothing is stored', async () => {
    const key = await createTestKey(t.db);
    // An overlong '/', a stray 0xff and a surrogate encoded in UTF-8 bytes: none is UTF-8.
    const bad = Buffer.from([0xc0, 0xaf, 0xff, 0xed, 0xa0, 0x80]);
    const post = (path: string, head: string, tail: string) =>
      fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)]) });
    const collection = await post('/v1/collections', '{"id":"utf8-test","name":"a', 'b"}');
    expect(collection.status).to.equal(400);
    expect((await collection.json()).errors).to.deep.equal([{ pointer: '/body', message: 'must be UTF-8 text (RFC 8259 §8.1)', rule: 'utf-8' }]);
    expect(await t.db('kpt_collections').where('id', 'utf8-test').first()).to.equal(undefined);
    const ussd = await post('/api/ussd', '{"sessionId":"utf8-test', '","serviceCode":"*384#","phoneNumber":"+254712345678","text":""}');
    expect(await ussd.text()).to.equal('END Invalid input. Please try again.');
    expect(await t.db('ussd_sessions').where('id', 'like', 'utf8-test%').first()).to.equal(undefined);
    // Text that is UTF-8 passes, whatever its script.
    const good = await fetch(`${server.baseUrl}/v1/collections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: Buffer.from('{"id":"utf8-ok","name":"Jiko — 炉 🔥"}', 'utf8'),
    });
    expect(good.status).to.equal(201);
    expect((await good.json()).name).to.equal('Jiko — 炉 🔥');
    // A form (a USSD gateway's) is UTF-8 once its %-escapes are decoded; raw bytes alike.
    const form = (body: RequestInit['body']) => fetch(`${server.baseUrl}/api/ussd`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    const fields = (sessionId: string) => `sessionId=${sessionId}&serviceCode=*384%23&phoneNumber=%2B254712345678&text=`;
    expect(await (await form(fields('utf8-form%E9'))).text()).to.equal('END Invalid input. Please try again.');
    expect(await (await form(Buffer.concat([Buffer.from(fields('utf8-raw')), Buffer.from([0xe9])]))).text()).to.equal('END Invalid input. Please try again.');
    expect(await t.db('ussd_sessions').where('id', 'like', 'utf8-%').first()).to.equal(undefined);
    expect(await (await form(fields('utf8-form-ok'))).text()).to.match(/^CON /);
    // JSON is UTF-8 alone: another utf-* charset (which body-parser would decode) is 415.
    for (const [charset, status] of [['utf-16', 415], ['UTF-8', 201]] as const) {
      const res = await fetch(`${server.baseUrl}/v1/collections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': `application/json; charset=${charset}` },
        body: `{"id":"utf8-${charset}","name":"x"}`,
      });
      expect(res.status, charset).to.equal(status);
      if (status === 415) expect(await res.json()).to.include({ type: 'urn:hearth:problem:charset-unsupported' });
    }
  });

  it('an object naming a member twice (I-JSON, RFC 7493 §2.3) is a 400 pointing at it, in every area, and nothing is stored', async () => {
    const key = await createTestKey(t.db);
    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body });
    const collection = await post('/v1/collections', '{"id":"dup-test","name":"a","name":"b"}');
    expect(collection.status).to.equal(400);
    expect((await collection.json()).errors).to.deep.equal([
      { pointer: '/body/name', message: 'is a name its object already has; each name may appear once (I-JSON, RFC 7493 §2.3)', rule: 'unique-names' },
    ]);
    expect(await t.db('kpt_collections').where('id', 'dup-test').first()).to.equal(undefined);
    // Names compare as read: "\u006e" is "n"; deep in an array too.
    const entity = await post('/v1/entities', '{"type":"Device","properties":{"list":[{"n":1},{"n":1,"\\u006e":2}]}}');
    expect(entity.status).to.equal(400);
    expect((await entity.json()).errors[0]).to.include({ pointer: '/body/properties/list/1/n', rule: 'unique-names' });
    const ussd = await post('/api/ussd', '{"sessionId":"dup-test","serviceCode":"*384#","phoneNumber":"+254712345678","text":"","text":"2"}');
    expect(await ussd.text()).to.equal('END Invalid input. Please try again.');
    expect(await t.db('ussd_sessions').where('id', 'dup-test').first()).to.equal(undefined);
    // The same name in two objects is no repeat.
    expect((await post('/v1/entities', '{"type":"Device","properties":{"a":{"n":1},"b":{"n":2}}}')).status).to.equal(201);
  });

  it('a lone surrogate (not text: RFC 7493) is a 400 naming it, in every area, and nothing is stored', async () => {
    const key = await createTestKey(t.db);
    const send = (method: string, path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body });
    const lone = { pointer: '/body/name', message: 'must not contain a lone surrogate (half of a UTF-16 pair), which is not a character', rule: 'no-lone-surrogate' };
    const collection = await send('POST', '/v1/collections', '{"id":"lone-test","name":"a\\ud800b"}', { 'idempotency-key': 'lone-1' });
    expect(collection.status).to.equal(400);
    expect((await collection.json()).errors).to.deep.equal([lone]);
    expect(await t.db('kpt_collections').where('id', 'lone-test').first()).to.equal(undefined);
    const claim = await send(
      'POST',
      '/v1/claims',
      JSON.stringify({
        type: 'KPTClaim',
        collectionId: 'default',
        householdId: 'did:ixo:entity:00000000000000000000000000000077',
        testGroup: 'reference',
        fuelMeasurements: { total: 7.5, dailyLogs: [2.5, 2.4, 2.6] },
        externalFactors: { season: 'long', culturalEvents: ['none'], occupationalFactors: ['x'] },
      }).replace('"long"', '"long\\udfff"'),
    );
    expect(claim.status).to.equal(400);
    expect((await claim.json()).errors[0]).to.include({ pointer: '/body/externalFactors/season', rule: 'no-lone-surrogate' });
    expect(await t.db('kpt_claims').where('household_did', 'did:ixo:entity:00000000000000000000000000000077')).to.deep.equal([]);
    const verify = await send('POST', '/v1/credentials/verify', '{"verifiableCredential":{"credentialSubject":{"a":"\\ud800"}}}');
    expect(verify.status).to.equal(400);
    expect((await verify.json()).errors[0]).to.include({ pointer: '/body/verifiableCredential/credentialSubject/a', rule: 'no-lone-surrogate' });
    const preference = await send('POST', '/agent/tools/set_user_preferences/invoke', '{"roomId":"lone","arguments":{"userName":"x\\ud800"}}');
    expect(preference.status).to.equal(400);
    expect(await t.db('agent_user_preferences').where('room_id', 'lone')).to.deep.equal([]);
    const ussd = await send('POST', '/api/ussd', JSON.stringify({ sessionId: 'lone-test', serviceCode: '*384#', phoneNumber: '+254712345678', text: '1' }).replace('"1"', '"1\\ud800"'));
    expect(await ussd.text()).to.equal('END Invalid input. Please try again.');
    expect(await t.db('ussd_sessions').where('id', 'lone-test').first()).to.equal(undefined);
    const chain = await fetch(`${server.baseUrl}/chain/entity?pagination.key=%ED%A0%80`);
    expect(chain.status).to.equal(400);
    expect(await chain.json()).to.include({ code: 3 });
  });

  it('each area answers only its own paths, with and without a trailing slash', async () => {
    expect((await fetch(`${server.baseUrl}/health/`)).status).to.equal(200);
    const ussd = await fetch(`${server.baseUrl}/api/ussd/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId: 'scope-test', serviceCode: '*384#', phoneNumber: '+254712345678', text: '' }),
    });
    expect(ussd.status).to.equal(200);
    expect(ussd.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
    expect(await ussd.text()).to.match(/^CON /);
    expect((await fetch(`${server.baseUrl}/v1x/claims`)).status).to.equal(404);
  });

  it('an unknown /chain route is a cosmos 404 (code 5), as the specification says', async () => {
    const res = await fetch(`${server.baseUrl}/chain/nothing-here`);
    expect(res.status).to.equal(404);
    expect(await res.json()).to.include({ code: 5 });
  });
});
