// The partner SDK as a partner gets it: the built package sdk/ (make sdk), installed by name,
// type-checked under NodeNext, run by plain Node, and used against a running server with every
// answer checked against the contract.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import {
  client as defaultClient, createCollection, createHearthClient, getClaim, getCollectionReport, getHealth, submitClaim,
  type KptClaimRequest,
} from '@hearth/sdk';
import { expectContractResponse } from '../helpers/contract.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { kptClaim, PARTNER_DID } from '../twins/fixtures.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const SDK = join(ROOT, 'sdk');

/** A project outside the repo with @hearth/sdk installed (as npm links a local package). */
function consumerProject(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-sdk-consumer-'));
  mkdirSync(join(dir, 'node_modules', '@hearth'), { recursive: true });
  symlinkSync(SDK, join(dir, 'node_modules', '@hearth', 'sdk'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

describe('@hearth/sdk, the built package', () => {
  let db: TestDatabase & { drop(): Promise<void> };
  let server: TestServer;
  let key: string;
  const dirs: string[] = [];
  before(async () => {
    db = await createTestDatabase('sqlite');
    server = await startTestServer(db.db);
    key = await createTestKey(db.db, { principalDid: PARTNER_DID, scopes: ['twins:read', 'twins:write', 'claims:read', 'claims:write'] });
  });
  after(async () => {
    await server.stop();
    await db.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('builds dist before it packs (prepack), so a checkout without sdk/dist packs code, not an empty package', () => {
    const manifest = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts.prepack).to.equal('npm run build');
    expect(manifest.scripts.build).to.match(/\btsc -p tsconfig\.json\b/);
  });

  it('packs built JS, declarations, README and the Apache-2.0 LICENSE, and nothing of the sources', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: SDK });
    const [pack] = JSON.parse(stdout) as [{ name: string; files: { path: string }[] }];
    const files = pack.files.map((f) => f.path);
    expect(pack.name).to.equal('@hearth/sdk');
    expect(files).to.include.members(['LICENSE', 'README.md', 'package.json', 'dist/sdk/src/index.js', 'dist/sdk/src/index.d.ts', 'dist/generated/openapi/sdk.gen.js']);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).to.deep.equal([]);
  });

  it('ships the KPT JSON-LD context, byte for byte the one credentials pin, for offline verifiers', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: SDK });
    const [pack] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    expect(pack.files.map((f) => f.path)).to.include('contexts/kpt-v1.jsonld');
    const manifest = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(manifest.exports['./contexts/kpt-v1.jsonld']).to.equal('./contexts/kpt-v1.jsonld');
    expect(readFileSync(join(SDK, 'contexts/kpt-v1.jsonld'))).to.deep.equal(readFileSync(join(ROOT, 'src/twins/credentials/contexts/kpt-v1.jsonld')));
  });

  it('type-checks in a strict NodeNext project: .js specifiers, request unit optional, response unit present', async function () {
    this.timeout(60_000);
    const dir = consumerProject({
      'tsconfig.json': JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
        files: ['consumer.ts'],
      }),
      'consumer.ts': `import { createHearthClient, getClaim, submitClaim, type KptClaim, type KptClaimRequest } from '@hearth/sdk';
const client = createHearthClient({ baseUrl: 'https://hearth.example.org', apiKey: 'hth_x' });
// A request may leave unit out (the server fills in its default)...
const request: KptClaimRequest = { type: 'KPTClaim', householdId: 'did:ixo:entity:1', testGroup: 'reference', fuelMeasurements: { total: 3, dailyLogs: [1, 1, 1] } };
await submitClaim({ client, body: request });
// ...and every claim answered carries it.
const claim: KptClaim = (await getClaim({ client, path: { id: 'kpt_1' }, throwOnError: true })).data;
export const unit: 'kg' = claim.fuelMeasurements.unit;
`,
    });
    dirs.push(dir);
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir]).catch((e) => {
      throw new Error(`tsc failed:\n${e.stdout}${e.stderr}`);
    });
  });

  it('runs under plain Node (no tsx, no bundler) against a server at the base URL it is given', async () => {
    const dir = consumerProject({
      'main.js': `import { createHearthClient, getHealth } from '@hearth/sdk';
const res = await getHealth({ client: createHearthClient({ baseUrl: process.argv[2] + '/' }) });
console.log(JSON.stringify({ status: res.response.status, body: res.data }));
`,
    });
    dirs.push(dir);
    const { stdout } = await run(process.execPath, ['main.js', server.baseUrl], { cwd: dir });
    const out = JSON.parse(stdout);
    expect(out.status).to.equal(200);
    expect(out.body).to.include({ status: 'ok', database: 'connected' });
  });

  it('submits a claim and reads it back and the report, every answer as the contract says', async () => {
    const client = createHearthClient({ baseUrl: server.baseUrl, apiKey: key });
    const created = await createCollection({ client, body: { id: 'sdk-test', name: 'SDK test' } });
    expect(created.response.status).to.equal(201);
    expectContractResponse('post', '/v1/collections', { status: 201, headers: created.response.headers, body: created.data });

    const body: KptClaimRequest = kptClaim({ collectionId: 'sdk-test' });
    expect(body.fuelMeasurements).not.to.have.property('unit');
    const submitted = await submitClaim({ client, body });
    expect(submitted.response.status).to.equal(201);
    expectContractResponse('post', '/v1/claims', { status: 201, headers: submitted.response.headers, body: submitted.data });
    expect(submitted.data!.fuelMeasurements.unit).to.equal('kg');

    const got = await getClaim({ client, path: { id: submitted.data!.id } });
    expectContractResponse('get', '/v1/claims/{id}', { status: 200, headers: got.response.headers, body: got.data });
    expect(got.data).to.deep.equal(submitted.data);

    const report = await getCollectionReport({ client, path: { id: 'sdk-test' } });
    expectContractResponse('get', '/v1/collections/{id}/report', { status: 200, headers: report.response.headers, body: report.data });
    expect(report.data!.collectionId).to.equal('sdk-test');

    const unauthenticated = await getClaim({ client: createHearthClient({ baseUrl: server.baseUrl }), path: { id: submitted.data!.id } });
    expect(unauthenticated.response.status).to.equal(401);
    expectContractResponse('get', '/v1/claims/{id}', { status: 401, headers: unauthenticated.response.headers, body: unauthenticated.error });
  });

  it('has a default client whose base URL can be set once for every call', async () => {
    expect(defaultClient.getConfig().baseUrl).to.equal('http://localhost:3000');
    const before = defaultClient.getConfig().baseUrl;
    defaultClient.setConfig({ baseUrl: server.baseUrl });
    try {
      const res = await getHealth();
      expect(res.response.status).to.equal(200);
      expect(res.response.url).to.equal(`${server.baseUrl}/health`);
    } finally {
      defaultClient.setConfig({ baseUrl: before });
    }
  });
});
