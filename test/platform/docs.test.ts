// GET /openapi.json and the API reference page GET /docs, and area C's document and page
// (GET /docs/chain-openapi.json, GET /docs/chain), the pages loaded in a real headless Chromium:
// each renders every operation of its document and fetches nothing from another host.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { Validator } from '@seriousme/openapi-schema-validator';
import { contractSchema, loadOpenApiDocument, type OpenApiDocument } from '../../src/platform/contract.ts';
import { loadChainOpenApiDocument } from '../../src/chain/openapi.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { useChromium } from '../helpers/chromium.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operations = (doc: OpenApiDocument = loadOpenApiDocument()) =>
  Object.entries(doc.paths as Record<string, Record<string, { operationId: string; summary?: string }>>).flatMap(
    ([path, item]) => METHODS.filter((m) => item[m]).map((m) => ({ method: m, path, ...item[m]! })),
  );

/** Every `example` of a request or response body, or of a response header, in the document, with the JSON pointer of its schema. */
function examples(): { where: string; schema: string; example: unknown }[] {
  const doc = loadOpenApiDocument();
  const esc = (x: string) => x.replace(/~/g, '~0').replace(/\//g, '~1');
  const found: { where: string; schema: string; example: unknown }[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS.filter((m) => item[m])) {
      const base = `#/paths/${esc(path)}/${method}`;
      const bodies: [string, any][] = [['requestBody', item[method].requestBody], ...Object.entries<any>(item[method].responses ?? {}).map(([st, r]): [string, any] => [`responses/${st}`, r])];
      for (const [at, body] of bodies) {
        for (const [type, media] of Object.entries<any>(body?.content ?? {})) {
          if ('example' in media) found.push({ where: `${method} ${path} ${at} ${type}`, schema: `${base}/${at}/content/${esc(type)}/schema`, example: media.example });
        }
        for (const [name, header] of Object.entries<any>(body?.headers ?? {})) {
          if ('example' in header) found.push({ where: `${method} ${path} ${at} header ${name}`, schema: `${base}/${at}/headers/${esc(name)}/schema`, example: header.example });
        }
      }
    }
  }
  return found;
}

describe('API docs: /openapi.json and /docs, /docs/chain-openapi.json and /docs/chain', () => {
  it('the bundled contract is a valid OpenAPI 3.1 document, as an independent validator (its JSON Schemas of the OAS) reads it', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(loadOpenApiDocument()));
    expect(result.valid, JSON.stringify(result.errors)).to.equal(true);
    expect(validator.version).to.equal('3.1');
  });

  it('every request, response and response header example in the contract matches its schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
    ajv.addSchema(loadOpenApiDocument(), 'openapi.json');
    const all = examples();
    expect(all.length).to.be.at.least(22);
    for (const { where, schema, example } of all) {
      const validate = ajv.compile({ $ref: `openapi.json${schema}` });
      expect(validate(example), `${where}: ${ajv.errorsText(validate.errors)}`).to.equal(true);
    }
  });


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

  it('no pattern uses \\s or \\S (Unicode whitespace in ECMAScript, ASCII in RE2, which Go and Rust partners use); the class spelt out instead is ECMAScript\'s \\S exactly', () => {
    const patterns: string[] = [];
    const walk = (node: unknown): void => {
      if (!node || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        if (k === 'pattern' && typeof v === 'string') patterns.push(v);
        else walk(v);
      }
    };
    walk(loadOpenApiDocument());
    expect(patterns.length).to.be.at.least(20);
    expect(patterns.filter((p) => /\\[sS]/.test(p))).to.deep.equal([]);
    const spelt = new RegExp(contractSchema(loadOpenApiDocument(), 'PluginText80').pattern!, 'u');
    for (let c = 0; c <= 0xffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const ch = String.fromCharCode(c);
      if (spelt.test(ch) !== /\S/u.test(ch)) expect.fail(`U+${c.toString(16)}`);
    }
  });

  it('no request body schema declares a default: generators such as openapi-typescript would make the field required for partners', () => {
    const doc = loadOpenApiDocument();
    const resolve = (ref: string) => ref.replace(/^#\//, '').split('/').reduce((node: any, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    const defaults: string[] = [];
    const seen = new Set<unknown>();
    const walk = (node: unknown, at: string): void => {
      if (!node || typeof node !== 'object' || seen.has(node)) return;
      seen.add(node);
      const schema = node as Record<string, unknown>;
      if (typeof schema.$ref === 'string') return walk(resolve(schema.$ref), schema.$ref);
      if ('default' in schema) defaults.push(at);
      for (const [key, child] of Object.entries(schema)) walk(child, `${at}/${key}`);
    };
    for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
      for (const method of METHODS.filter((m) => item[m])) {
        for (const [type, media] of Object.entries<any>(item[method].requestBody?.content ?? {})) walk(media.schema, `${method} ${path} ${type}`);
      }
    }
    expect(defaults).to.deep.equal([]);
  });

  it('serves the bundled contract at /openapi.json, naming this instance (PUBLIC_BASE_URL, else localhost:PORT) as its server', async () => {
    const res = await fetch(`${server.baseUrl}/openapi.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    const served = await res.json();
    expect(served.servers).to.deep.equal([{ url: `http://localhost:${server.config.PORT}`, description: 'This Hearth instance' }]);
    expect({ ...served, servers: undefined }).to.deep.equal({ ...loadOpenApiDocument(), servers: undefined });
    // A database of its own: this one signs credentials under the first server's URL, and refuses another.
    const other = await createTestDatabase('sqlite');
    const published = await startTestServer(other.db, { PUBLIC_BASE_URL: 'https://hearth.example.org/' });
    try {
      expect((await (await fetch(`${published.baseUrl}/openapi.json`)).json()).servers).to.deep.equal([{ url: 'https://hearth.example.org', description: 'This Hearth instance' }]);
    } finally {
      await published.stop();
      await other.drop();
    }
  });

  it('serves area C\'s document at /docs/chain-openapi.json, a valid OpenAPI 3.1 document naming this instance as its server', async () => {
    const res = await fetch(`${server.baseUrl}/docs/chain-openapi.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    const served = await res.json();
    expect(served.servers).to.deep.equal([{ url: `http://localhost:${server.config.PORT}`, description: 'This Hearth instance' }]);
    expect({ ...served, servers: undefined }).to.deep.equal({ ...loadChainOpenApiDocument(), servers: undefined });
    const validator = new Validator();
    const result = await validator.validate(served);
    expect(result.valid, JSON.stringify(result.errors)).to.equal(true);
    expect(validator.version).to.equal('3.1');
  });

  it('answers every method but GET and HEAD with 405 problem+json and Allow, as contract paths do', async () => {
    for (const path of ['/openapi.json', '/docs', '/docs/redoc.standalone.js', '/docs/chain', '/docs/chain-openapi.json']) {
      for (const method of ['OPTIONS', 'POST', 'PATCH', 'DELETE']) {
        const res = await fetch(`${server.baseUrl}${path}`, { method });
        expect(res.status, `${method} ${path}`).to.equal(405);
        expect(res.headers.get('allow'), `${method} ${path}`).to.equal('GET, HEAD');
        expect(res.headers.get('content-type'), `${method} ${path}`).to.match(/^application\/problem\+json/);
      }
      expect((await fetch(`${server.baseUrl}${path}`, { method: 'HEAD' })).status, `HEAD ${path}`).to.equal(200);
    }
  });

  it('serves the reference page with its script from this server and a policy that allows no other host', async () => {
    const res = await fetch(`${server.baseUrl}/docs`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).to.include("default-src 'none'").and.include("script-src 'self'");
    const html = await res.text();
    expect(html).to.include('<script src="docs/redoc.standalone.js"></script>');
    expect(html).not.to.match(/https?:\/\//);
    const js = await fetch(`${server.baseUrl}/docs/redoc.standalone.js`);
    expect(js.status).to.equal(200);
    expect(js.headers.get('content-type')).to.match(/^text\/javascript/);
    expect((await js.text()).length).to.be.greaterThan(100_000);
    const chain = await fetch(`${server.baseUrl}/docs/chain`);
    expect(chain.status).to.equal(200);
    expect(chain.headers.get('content-security-policy')).to.equal(csp);
    const chainHtml = await chain.text();
    // Relative to /docs/chain: /docs/redoc.standalone.js and /docs/chain-openapi.json.
    expect(chainHtml).to.include('<script src="redoc.standalone.js"></script>').and.include('spec-url="chain-openapi.json"');
    expect(chainHtml).not.to.match(/https?:\/\//);
  });

  it('redirects a page asked for with a trailing slash (whose relative URLs would miss) to the page, by a relative Location', async () => {
    for (const [path, location] of [
      ['/docs/', '../docs'],
      ['/docs/?x=1', '../docs?x=1'],
      ['/docs/chain/', '../chain'],
    ] as const) {
      const res = await fetch(`${server.baseUrl}${path}`, { redirect: 'manual' });
      expect(res.status, path).to.equal(301);
      expect(res.headers.get('location'), path).to.equal(location);
      // Where a browser lands: the page itself.
      expect(new URL(location, `${server.baseUrl}${path}`).pathname, path).to.equal(path.replace(/\/(\?.*)?$/, ''));
    }
  });

  describe('in headless Chromium', () => {
    const browser = useChromium();
    const REDOC_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

    /** Opens `path`, waits for Redoc to render, and returns the page with what it loaded and what went wrong. */
    async function open(path: string) {
      const page = await browser().newPage();
      const foreign: string[] = [];
      const errors: string[] = [];
      const blocked: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(server.baseUrl) && !/^(data|blob):/.test(r.url())) foreign.push(r.url());
      });
      page.on('requestfailed', (r) => {
        if (r.failure()?.errorText === 'csp') blocked.push(r.url());
      });
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('response', (r) => {
        if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
      });
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      const res = await page.goto(`${server.baseUrl}${path}`);
      expect(res!.status(), path).to.equal(200);
      await page.waitForSelector('.api-content h2', { timeout: 30_000 });
      const text = await page.locator('body').innerText();
      const sections = await page.locator('[data-section-id^="operation/"]').count();
      const url = new URL(page.url());
      const title = await page.title();
      await page.close();
      // Redoc 2 always shows Redocly's logo from its CDN in the sidebar footer: the page's policy
      // stops that before it reaches the network, and nothing else tries.
      expect(foreign, `${path}: requests to other hosts`).to.deep.equal([REDOC_LOGO]);
      expect(blocked, `${path}: stopped by the Content-Security-Policy`).to.deep.equal(foreign);
      expect(errors.filter((e) => !e.includes(`'${REDOC_LOGO}' violates`)), `${path}: errors in the page`).to.deep.equal([]);
      return { text, sections, title, path: url.pathname };
    }

    it('loads /docs and /docs/, which lands on it, each listing every operation of the contract and requesting nothing from elsewhere', async function () {
      this.timeout(120_000);
      const ops = operations();
      expect(ops.length).to.be.greaterThan(20);
      for (const path of ['/docs', '/docs/']) {
        const page = await open(path);
        expect(page.path).to.equal('/docs');
        expect(page.title).to.equal('Hearth API reference');
        for (const op of ops) expect(page.text, `${path}: ${op.method} ${op.path}`).to.include(op.summary ?? op.operationId);
        // Every operation has its own section in the rendered document, and so has each webhook Hearth sends.
        const webhooks = operations({ paths: loadOpenApiDocument().webhooks ?? {} } as OpenApiDocument);
        expect(webhooks.map((w) => w.operationId), 'the webhooks section').to.deep.equal(['receiveEvent']);
        for (const w of webhooks) expect(page.text, `${path}: webhook ${w.operationId}`).to.include(w.summary ?? w.operationId);
        expect(page.sections, path).to.equal(ops.length + webhooks.length);
        expect(page.text, path).to.include('Chain gateway (area C)');
      }
    });

    it('loads /docs/chain and /docs/chain/, each listing every route of area C, and links the two pages both ways', async function () {
      this.timeout(120_000);
      const ops = operations(loadChainOpenApiDocument());
      expect(ops.length).to.be.at.least(30);
      for (const path of ['/docs/chain', '/docs/chain/']) {
        const page = await open(path);
        expect(page.path).to.equal('/docs/chain');
        expect(page.title).to.equal('Hearth chain gateway reference');
        for (const op of ops) expect(page.text, `${path}: ${op.method} ${op.path}`).to.include(op.summary!);
        expect(page.sections, path).to.equal(ops.length);
        expect(page.text, path).to.include('/chain/entity/{id}').and.include('Hearth API (areas A, B, D)');
      }
      const page = await browser().newPage();
      await page.goto(`${server.baseUrl}/docs`);
      await page.click('nav a');
      await page.waitForURL(/\/docs\/chain$/);
      await page.waitForSelector('.api-content h2', { timeout: 30_000 });
      expect(await page.title()).to.equal('Hearth chain gateway reference');
      await page.click('nav a');
      await page.waitForURL(/\/docs$/);
      expect(await page.title()).to.equal('Hearth API reference');
      await page.close();
    });
  });
});
