// The partner SDK's client as a partner uses it (the built package, by name): retries honouring
// Retry-After, timeouts, automatic Idempotency-Keys kept across retries, typed errors from
// problem details, iterators over paginated lists, and webhook verification. Local node:http
// servers play the failures; a real Hearth (SQLite and PostgreSQL) answers the rest.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import {
  allCollections, allEntities, createCollection, createEntity, createHearthClient, CREATING_POST_PATH, getClaim, getHealth, HearthApiError,
  HearthRequestError, HearthWebhookError, listCollections, listEvents, paginate, retryAfterMs, submitClaim, verifyCredential, verifyWebhook,
  allEvents, eventPages,
} from '@hearth/sdk';
import { loadOpenApiDocument } from '../../src/platform/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';
import { householdDid, kptClaim, PARTNER_DID } from '../twins/fixtures.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

/** A local HTTP server answering each request with `handler` (n counts from 1); the requests it saw. */
async function scripted(handler: Handler) {
  const seen: { method: string; url: string; idempotencyKey: string | undefined }[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, idempotencyKey: req.headers['idempotency-key'] as string | undefined });
    req.resume();
    req.on('end', () => handler(req, res, seen.length));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json', ...headers }).end(JSON.stringify(body));

const healthy = { status: 'ok' };

/** A sleep that records how long it was asked to wait and does not wait. */
function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe('@hearth/sdk client: retries, timeouts, Idempotency-Keys', () => {
  const servers: { close(): Promise<void> }[] = [];
  const serve = async (handler: Handler) => {
    const s = await scripted(handler);
    servers.push(s);
    return s;
  };
  after(async () => {
    for (const s of servers) await s.close();
  });

  it('retries a 429 after the Retry-After it names (seconds), then answers the 200', async () => {
    const s = await serve((_req, res, n) => (n === 1 ? json(res, 429, { type: 'about:blank', title: 'Too Many Requests', status: 429 }, { 'retry-after': '2' }) : json(res, 200, healthy)));
    const { waits, sleep } = recordingSleep();
    const result = await getHealth({ client: createHearthClient({ baseUrl: s.baseUrl, sleep }) });
    expect(result.response.status).to.equal(200);
    expect(result.data).to.deep.equal(healthy);
    expect(s.seen).to.have.length(2);
    expect(waits).to.deep.equal([2000]);
  });

  it('reads Retry-After as an HTTP date too', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');
    expect(retryAfterMs('Sun, 29 Nov 2026 12:00:03 GMT', now)).to.equal(3000);
    expect(retryAfterMs('Sun, 29 Nov 2026 11:59:00 GMT', now)).to.equal(0);
    expect(retryAfterMs('7', now)).to.equal(7000);
    expect(retryAfterMs('soon', now)).to.equal(undefined);
    expect(retryAfterMs(null, now)).to.equal(undefined);
  });

  it('stops after maxAttempts, answering the last 429; a Retry-After beyond maxRetryAfterMs is not waited for', async () => {
    const s = await serve((_req, res) => json(res, 429, { type: 'about:blank', title: 'Too Many Requests', status: 429 }));
    const { waits, sleep } = recordingSleep();
    const result = await getHealth({ client: createHearthClient({ baseUrl: s.baseUrl, sleep, retry: { maxAttempts: 4, baseDelayMs: 100 } }) });
    expect(result.response.status).to.equal(429);
    expect(s.seen).to.have.length(4);
    // Exponential backoff with full jitter: each wait below its doubling ceiling.
    expect(waits).to.have.length(3);
    waits.forEach((ms, i) => expect(ms).to.be.within(0, 100 * 2 ** i));

    const far = await serve((_req, res) => json(res, 429, { type: 'about:blank', title: 'Too Many Requests', status: 429 }, { 'retry-after': '120' }));
    const answer = await getHealth({ client: createHearthClient({ baseUrl: far.baseUrl, sleep, retry: { maxRetryAfterMs: 60_000 } }) });
    expect([answer.response.status, far.seen.length]).to.deep.equal([429, 1]);
  });

  it('retries a 503 of a GET, not of a POST without an Idempotency-Key', async () => {
    const outage = (_req: IncomingMessage, res: ServerResponse, n: number) => (n === 1 ? json(res, 503, { type: 'about:blank', title: 'Service Unavailable', status: 503 }, { 'retry-after': '1' }) : json(res, 200, { verified: true }));
    const { sleep } = recordingSleep();
    const get = await serve(outage);
    expect((await getHealth({ client: createHearthClient({ baseUrl: get.baseUrl, sleep }) })).response.status).to.equal(200);
    expect(get.seen).to.have.length(2);
    const post = await serve(outage);
    const verified = await verifyCredential({ client: createHearthClient({ baseUrl: post.baseUrl, sleep }), body: { verifiableCredential: {} } });
    expect(verified.response.status).to.equal(503);
    expect(post.seen).to.have.length(1);
  });

  it('sends a creating POST an Idempotency-Key of its own, the same on its retry; another call gets another', async () => {
    const s = await serve((_req, res, n) => (n === 1 ? json(res, 503, { type: 'about:blank', title: 'Service Unavailable', status: 503 }) : json(res, 201, { did: 'did:ixo:entity:1' })));
    const { sleep } = recordingSleep();
    const client = createHearthClient({ baseUrl: s.baseUrl, sleep });
    expect((await createEntity({ client, body: { type: 'Stove' } })).response.status).to.equal(201);
    const [first, retry] = s.seen;
    expect(first!.idempotencyKey).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(retry!.idempotencyKey).to.equal(first!.idempotencyKey);
    await createEntity({ client, body: { type: 'Stove' } });
    expect(s.seen[2]!.idempotencyKey).to.match(/^[0-9a-f-]{36}$/).and.not.equal(first!.idempotencyKey);
    // The caller's own key is kept; other POSTs get none; the option turns it off.
    await createEntity({ client, body: { type: 'Stove' }, headers: { 'Idempotency-Key': 'visit-0001' } });
    expect(s.seen[3]!.idempotencyKey).to.equal('visit-0001');
    await verifyCredential({ client, body: { verifiableCredential: {} } });
    expect(s.seen[4]!.idempotencyKey).to.equal(undefined);
    await createEntity({ client: createHearthClient({ baseUrl: s.baseUrl, idempotencyKeys: false }), body: { type: 'Stove' } });
    expect(s.seen[5]!.idempotencyKey).to.equal(undefined);
  });

  it('keys exactly the creating POSTs of the contract (those taking an Idempotency-Key)', () => {
    const doc = loadOpenApiDocument() as { paths: Record<string, Record<string, { parameters?: { $ref?: string; name?: string }[] }>> };
    const keyed = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).filter(([, op]) => op?.parameters?.some((p) => p.$ref?.endsWith('/Idempotency-Key') || p.name === 'Idempotency-Key')).map(([method]) => `${method} ${path}`),
    );
    expect(keyed.sort()).to.deep.equal(['post /v1/claims', 'post /v1/collections', 'post /v1/collections/{id}/draws', 'post /v1/entities', 'post /v1/webhooks']);
    const posts = Object.entries(doc.paths).filter(([, item]) => item.post).map(([path]) => path.replace(/\{[^}]+\}/g, 'x'));
    expect(posts.filter((p) => CREATING_POST_PATH.test(p)).sort()).to.deep.equal(['/v1/claims', '/v1/collections', '/v1/collections/x/draws', '/v1/entities', '/v1/webhooks']);
  });

  it('times out an attempt (timeoutMs): a HearthRequestError with timedOut, after the attempts allowed', async () => {
    const s = await serve(() => undefined);
    const { sleep } = recordingSleep();
    const err = await getHealth({ client: createHearthClient({ baseUrl: s.baseUrl, timeoutMs: 50, sleep, retry: { maxAttempts: 2 } }), throwOnError: true }).then(
      () => expect.fail('no timeout'),
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(HearthRequestError);
    expect((err as HearthRequestError).timedOut).to.equal(true);
    expect(s.seen).to.have.length(2);
  });

  it('retries a GET whose connection failed without an answer', async () => {
    const s = await serve((req, res, n) => (n === 1 ? req.socket.destroy() : json(res, 200, healthy)));
    const { sleep } = recordingSleep();
    const result = await getHealth({ client: createHearthClient({ baseUrl: s.baseUrl, sleep }) });
    expect([result.response.status, s.seen.length]).to.deep.equal([200, 2]);
  });
});

describe('@hearth/sdk: webhook verification', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const signed = (payload: string, at = new Date()) => {
    const id = `msg_${randomBytes(8).toString('hex')}`;
    return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, at, payload) };
  };
  const payload = JSON.stringify({ type: 'claim.verified', timestamp: '2026-11-29T12:00:00Z', data: { id: 'kpt_1' } });

  it('returns the event of a payload signed with the secret (headers as a record, or as Headers)', () => {
    const headers = signed(payload);
    expect(verifyWebhook(payload, headers, secret)).to.deep.equal(JSON.parse(payload));
    expect(verifyWebhook(new TextEncoder().encode(payload), new Headers(headers), secret)).to.deep.equal(JSON.parse(payload));
  });

  it('throws HearthWebhookError for a tampered payload, another secret, an old timestamp or missing headers', () => {
    const headers = signed(payload);
    expect(() => verifyWebhook(payload.replace('kpt_1', 'kpt_2'), headers, secret)).to.throw(HearthWebhookError);
    expect(() => verifyWebhook(payload, headers, `whsec_${randomBytes(24).toString('base64')}`)).to.throw(HearthWebhookError);
    expect(() => verifyWebhook(payload, signed(payload, new Date(Date.now() - 10 * 60_000)), secret)).to.throw(HearthWebhookError);
    expect(() => verifyWebhook(payload, {}, secret)).to.throw(HearthWebhookError);
  });
});

forEachDatabase('@hearth/sdk client against Hearth', (t) => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(t.db);
    key = await createTestKey(t.db, { principalDid: PARTNER_DID, scopes: ['twins:read', 'twins:write', 'claims:read', 'claims:write'] });
  });
  after(() => server.stop());

  it('throwOnError: a 404 and a 400 throw HearthApiError with the problem details', async () => {
    const client = createHearthClient({ baseUrl: server.baseUrl, apiKey: key, throwOnError: true });
    const missing = await getClaim({ client, path: { id: 'kpt_00000000000000000000000000000000' } }).then(() => expect.fail('no error'), (e: unknown) => e);
    expect(missing).to.be.instanceOf(HearthApiError);
    const notFound = missing as HearthApiError;
    expect(notFound).to.include({ status: 404, title: 'Not Found' });
    expect(notFound.type).to.be.a('string');
    expect(notFound.detail).to.match(/kpt_0+/);
    expect(notFound.response.status).to.equal(404);
    expect(notFound.requestId).to.be.a('string');

    const invalid = await submitClaim({ client, body: { type: 'KPTClaim' } as never }).then(() => expect.fail('no error'), (e: unknown) => e);
    expect(invalid).to.be.instanceOf(HearthApiError);
    expect((invalid as HearthApiError).status).to.equal(400);
    expect((invalid as HearthApiError).issues.map((i) => i.pointer)).to.include('/body/householdId');
    // Without throwOnError the call resolves to the problem details, as its type says.
    const plain = await getClaim({ client: createHearthClient({ baseUrl: server.baseUrl, apiKey: key }), path: { id: 'kpt_00000000000000000000000000000000' } });
    expect(plain.error).to.include({ status: 404, title: 'Not Found' });
  });

  it('paginate: every item of a list across several pages, a page asked for as the items are consumed', async () => {
    let pages = 0;
    const client = createHearthClient({
      baseUrl: server.baseUrl,
      apiKey: key,
      fetch: (input, init) => {
        if ((input instanceof Request ? input.method : init?.method) === 'GET') pages++;
        return fetch(input, init);
      },
    });
    const ids = ['page-a', 'page-b', 'page-c', 'page-d', 'page-e'];
    for (const id of ids) expect((await createCollection({ client, body: { id, name: id } })).response.status).to.equal(201);
    const seen: string[] = [];
    for await (const collection of paginate(listCollections, { client, query: { limit: 2 } })) seen.push(collection.id);
    expect(seen.filter((id) => id.startsWith('page-'))).to.deep.equal(ids);
    expect(pages).to.equal(Math.ceil(seen.length / 2));
    pages = 0;
    const iterator = allCollections({ client, query: { limit: 2 } })[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next();
    expect(pages).to.equal(1);
    await iterator.return(undefined);
    await createEntity({ client, body: { type: 'PagedStove' } });
    const stoves: string[] = [];
    for await (const entity of allEntities({ client, query: { type: 'PagedStove', limit: 1 } })) stoves.push(entity.type);
    expect(stoves).to.deep.equal(['PagedStove']);
  });

  it('allEvents and eventPages: the change feed to its end, page by page, and on from the last cursor later', async () => {
    const client = createHearthClient({ baseUrl: server.baseUrl, apiKey: key });
    expect((await createCollection({ client, body: { id: 'sdk-events', name: 'SDK events' } })).response.status).to.equal(201);
    // Stored, and rejected on rule 5 (no selection design): two events each.
    const submitted = async () => (await submitClaim({ client, body: kptClaim({ collectionId: 'sdk-events', householdId: householdDid() }) })).data!.id;
    const first = [await submitted(), await submitted()];
    const whole = (await listEvents({ client, query: { limit: 200 } })).data!;
    const events: string[] = [];
    for await (const event of allEvents({ client, query: { limit: 1 } })) events.push(event.id);
    expect(events).to.deep.equal(whole.items.map((e) => e.id));
    expect(events.length).to.be.at.least(2 * first.length);
    let cursor: string | undefined;
    for await (const page of eventPages({ client, query: { limit: 3 } })) cursor = page.nextCursor;
    const later = await submitted();
    const after: { type: string; claim?: string }[] = [];
    for await (const event of allEvents({ client, query: { after: cursor } })) after.push({ type: event.type, claim: 'claimId' in event.data ? event.data.claimId : undefined });
    expect(after.map((e) => e.type)).to.deep.equal(['claim.created', 'claim.rejected']);
    expect(after.every((e) => e.claim === later)).to.equal(true);
  });

  it('an answer lost on the way: the retry sends the same key, and Hearth replays the entity it created once', async () => {
    let lost = false;
    const { sleep } = recordingSleep();
    const client = createHearthClient({
      baseUrl: server.baseUrl,
      apiKey: key,
      sleep,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (lost) return response;
        lost = true;
        await response.body?.cancel();
        throw new TypeError('fetch failed');
      },
    });
    const result = await createEntity({ client, body: { type: 'LostAnswerStove' } });
    expect(result.response.status).to.equal(201);
    expect(result.response.headers.get('idempotent-replayed')).to.equal('true');
    expect(await t.db('twin_entities').where('type', 'LostAnswerStove').pluck('did')).to.deep.equal([result.data!.did]);
  });
});
