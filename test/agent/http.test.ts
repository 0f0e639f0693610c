import { expect } from 'chai';
import {
  buildAgentContext,
  getUserPreferences,
  invokeAgentTool,
  listAgentPlugins,
  listAgentTools,
} from '../../generated/openapi/sdk.gen.ts';
import { createHearth } from '../../src/app.ts';
import { configWith } from '../../src/config.ts';
import { createLogger } from '../../src/platform/logging.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

const ALICE = 'did:ixo:entity:alice0000000000000000000000000001';
const BOB = 'did:ixo:entity:bob000000000000000000000000000002';

forEachDatabase('agent HTTP (plugin on)', (t) => {
  let server: TestServer;
  let alice: string;
  let bob: string;
  let readOnly: string;
  let noAgent: string;
  before(async () => {
    server = await startTestServer(t.db);
    alice = await createTestKey(t.db, { principalDid: ALICE, scopes: ['agent:read', 'agent:write'] });
    bob = await createTestKey(t.db, { principalDid: BOB, scopes: ['agent:read', 'agent:write'] });
    readOnly = await createTestKey(t.db, { principalDid: ALICE, scopes: ['agent:read'] });
    noAgent = await createTestKey(t.db, { principalDid: ALICE, scopes: ['twins:read'] });
  });
  after(() => server.stop());
  const client = () => server.client;

  it('GET /user-preferences: 200 with a real JSON null when nothing is set', async () => {
    const res = await getUserPreferences({ client: client(), auth: alice, query: { roomId: '!empty:matrix.org' } });
    expect(res.response.status).to.equal(200);
    expect(res.response.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.data).to.equal(null);
    const raw = await fetch(`${server.baseUrl}/user-preferences?roomId=nothing`, { headers: { Authorization: `Bearer ${alice}` } });
    expect(await raw.text()).to.equal('null');
    expectContractResponse('GET', '/user-preferences', { status: 200, headers: res.response.headers, body: null });
  });

  it('set through the tool, then GET /user-preferences returns the record of that user and room', async () => {
    const invoked = await invokeAgentTool({
      client: client(),
      auth: alice,
      path: { name: 'set_user_preferences' },
      body: { roomId: '!kitchen:matrix.org', arguments: { userName: 'Mama Amina', language: 'sw', emoji: 'none' } },
    });
    expect(invoked.response.status).to.equal(200);
    expect(invoked.data?.tool).to.equal('set_user_preferences');
    expect(invoked.data?.result).to.deep.include({ userName: 'Mama Amina', language: 'sw', emoji: 'none', tone: null });
    expectContractResponse('POST', '/agent/tools/{name}/invoke', { status: 200, headers: invoked.response.headers, body: invoked.data });

    const res = await getUserPreferences({ client: client(), auth: alice, query: { roomId: '!kitchen:matrix.org' } });
    expect(res.response.status).to.equal(200);
    expect(res.data).to.deep.equal(invoked.data?.result);
    expectContractResponse('GET', '/user-preferences', { status: 200, headers: res.response.headers, body: res.data });

    // Another user in the same room, and the same user in another room, see nothing.
    expect((await getUserPreferences({ client: client(), auth: bob, query: { roomId: '!kitchen:matrix.org' } })).data).to.equal(null);
    expect((await getUserPreferences({ client: client(), auth: alice, query: { roomId: '!other:matrix.org' } })).data).to.equal(null);
  });

  it('without roomId, the user default room is used by the tool, the read and the context', async () => {
    await invokeAgentTool({ client: client(), auth: bob, path: { name: 'set_user_preferences' }, body: { arguments: { tone: 'dry' } } });
    expect((await getUserPreferences({ client: client(), auth: bob })).data).to.deep.include({ tone: 'dry' });
    expect((await getUserPreferences({ client: client(), auth: bob, query: { roomId: 'default' } })).data).to.deep.include({ tone: 'dry' });
    const ctx = await buildAgentContext({ client: client(), auth: bob });
    expect(ctx.data?.roomId).to.equal('default');
    expect(ctx.data?.state.userPreferences).to.deep.include({ tone: 'dry' });
  });

  it('GET /user-preferences: 401 without or with an unknown key, 403 without agent:read, 400 on a bad roomId', async () => {
    for (const auth of [undefined, 'hth_unknown']) {
      const res = await getUserPreferences({ client: client(), auth, query: { roomId: 'r' } });
      expect(res.response.status).to.equal(401);
      expect(res.response.headers.get('www-authenticate')).to.equal('Bearer realm="hearth"');
      expectContractResponse('GET', '/user-preferences', { status: 401, headers: res.response.headers, body: res.error });
    }
    const forbidden = await getUserPreferences({ client: client(), auth: noAgent, query: { roomId: 'r' } });
    expect(forbidden.response.status).to.equal(403);
    expectContractResponse('GET', '/user-preferences', { status: 403, headers: forbidden.response.headers, body: forbidden.error });
    const bad = await getUserPreferences({ client: client(), auth: alice, query: { roomId: 'x'.repeat(256) } });
    expect(bad.response.status).to.equal(400);
    expect((bad.error as any).errors[0].pointer).to.equal('/query/roomId');
    expectContractResponse('GET', '/user-preferences', { status: 400, headers: bad.response.headers, body: bad.error });
  });

  it('POST /agent/tools/{name}/invoke: 400 naming the field with zero writes, 404 unknown tool, 401, 403 without agent:write', async () => {
    const before = await t.db('agent_user_preferences').orderBy('user_did').orderBy('room_id');
    const bad = await invokeAgentTool({
      client: client(),
      auth: alice,
      path: { name: 'set_user_preferences' },
      body: { roomId: '!kitchen:matrix.org', arguments: { tone: 'calm', length: 'endless' } },
    });
    expect(bad.response.status).to.equal(400);
    expect(bad.response.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect((bad.error as any).errors).to.deep.equal([{ pointer: '/body/arguments/length', message: 'must be equal to one of the allowed values', rule: 'enum' }]);
    expectContractResponse('POST', '/agent/tools/{name}/invoke', { status: 400, headers: bad.response.headers, body: bad.error });
    expect(await t.db('agent_user_preferences').orderBy('user_did').orderBy('room_id')).to.deep.equal(before);

    const missingArgs = await invokeAgentTool({ client: client(), auth: alice, path: { name: 'set_user_preferences' }, body: {} as never });
    expect(missingArgs.response.status).to.equal(400);

    const unknown = await invokeAgentTool({ client: client(), auth: alice, path: { name: 'save_memory' }, body: { arguments: {} } });
    expect(unknown.response.status).to.equal(404);
    expectContractResponse('POST', '/agent/tools/{name}/invoke', { status: 404, headers: unknown.response.headers, body: unknown.error });

    const anonymous = await invokeAgentTool({ client: client(), path: { name: 'set_user_preferences' }, body: { arguments: { tone: 'x' } } });
    expect(anonymous.response.status).to.equal(401);
    const reader = await invokeAgentTool({ client: client(), auth: readOnly, path: { name: 'set_user_preferences' }, body: { arguments: { tone: 'x' } } });
    expect(reader.response.status).to.equal(403);
    expect(await t.db('agent_user_preferences').orderBy('user_did').orderBy('room_id')).to.deep.equal(before);
  });

  it('GET /agent/plugins lists the loaded plugin with its manifest and tools', async () => {
    const res = await listAgentPlugins({ client: client(), auth: readOnly });
    expect(res.response.status).to.equal(200);
    expect(res.data?.loaded.map((p) => [p.manifest.name, p.tools, p.forced])).to.deep.equal([['user-preferences', ['set_user_preferences'], false]]);
    expect(res.data?.excluded).to.deep.equal([]);
    expectContractResponse('GET', '/agent/plugins', { status: 200, headers: res.response.headers, body: res.data });
    expect((await listAgentPlugins({ client: client() })).response.status).to.equal(401);
  });

  it('GET /agent/tools returns JSON Schema function definitions', async () => {
    const res = await listAgentTools({ client: client(), auth: readOnly });
    expect(res.response.status).to.equal(200);
    expect(res.data?.tools.map((x) => x.name)).to.deep.equal(['set_user_preferences']);
    const tool = res.data!.tools[0]!;
    expect(tool.parameters).to.deep.include({ type: 'object', additionalProperties: false });
    expect(Object.keys((tool.parameters as any).properties)).to.have.members([
      'agentName', 'userName', 'language', 'tone', 'length', 'format', 'formality', 'emoji', 'customInstructions',
    ]);
    expectContractResponse('GET', '/agent/tools', { status: 200, headers: res.response.headers, body: res.data });
    expect((await listAgentTools({ client: client(), auth: noAgent })).response.status).to.equal(403);
  });

  it('POST /agent/context returns userPreferences and the rendered "User preferences" section', async () => {
    const res = await buildAgentContext({ client: client(), auth: readOnly, body: { roomId: '!kitchen:matrix.org' } });
    expect(res.response.status).to.equal(200);
    expect(res.data?.state.userPreferences).to.deep.include({ userName: 'Mama Amina', language: 'sw', emoji: 'none' });
    expect(res.data?.promptSections).to.have.length(1);
    expect(res.data?.promptSections[0]).to.include({ plugin: 'user-preferences', title: 'User preferences' });
    expect(res.data?.promptSections[0]?.content).to.include('- Call the user: Mama Amina');
    expectContractResponse('POST', '/agent/context', { status: 200, headers: res.response.headers, body: res.data });

    const empty = await buildAgentContext({ client: client(), auth: readOnly, body: { roomId: '!empty:matrix.org' } });
    expect(empty.data).to.deep.equal({ roomId: '!empty:matrix.org', state: { userPreferences: null }, promptSections: [] });
    const bad = await buildAgentContext({ client: client(), auth: readOnly, body: { roomId: '' } });
    expect(bad.response.status).to.equal(400);
    expect((await buildAgentContext({ client: client(), body: {} })).response.status).to.equal(401);
  });
});

forEachDatabase('agent HTTP (plugin off)', (t) => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(t.db, { AGENT_FEATURES: '{"user-preferences": false}' });
    key = await createTestKey(t.db, { principalDid: ALICE, scopes: ['agent:read', 'agent:write'] });
    await t.db('agent_user_preferences').insert({ user_did: ALICE, room_id: 'default', tone: 'warm', updated_at: new Date().toISOString() });
  });
  after(() => server.stop());

  it('GET /user-preferences does not exist: 404 with or without a key, never a validator answer', async () => {
    for (const auth of [key, undefined]) {
      for (const url of ['/user-preferences', '/user-preferences/', '/user-preferences?roomId=', '/User-Preferences?roomId=x']) {
        const res = await fetch(server.baseUrl + url, { headers: auth ? { Authorization: `Bearer ${auth}` } : {} });
        expect(res.status, `${url} ${auth ? 'with' : 'without'} key`).to.equal(404);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      }
    }
  });

  it('the tool does not exist: not listed, invoke is 404 and writes nothing', async () => {
    const tools = await listAgentTools({ client: server.client, auth: key });
    expect(tools.data).to.deep.equal({ tools: [] });
    const res = await invokeAgentTool({ client: server.client, auth: key, path: { name: 'set_user_preferences' }, body: { arguments: { tone: 'dry' } } });
    expect(res.response.status).to.equal(404);
    expect((await t.db('agent_user_preferences').where('user_did', ALICE).first())!.tone).to.equal('warm');
  });

  it('the context has no userPreferences state and no section', async () => {
    const res = await buildAgentContext({ client: server.client, auth: key, body: {} });
    expect(res.data).to.deep.equal({ roomId: 'default', state: {}, promptSections: [] });
    expectContractResponse('POST', '/agent/context', { status: 200, headers: res.response.headers, body: res.data });
  });

  it('GET /agent/plugins reports the exclusion and its reason', async () => {
    const res = await listAgentPlugins({ client: server.client, auth: key });
    expect(res.data).to.deep.equal({
      loaded: [],
      excluded: [{ name: 'user-preferences', reason: 'disabled-by-features', detail: 'AGENT_FEATURES sets "user-preferences" to false' }],
      unknownFeatureKeys: [],
    });
    expectContractResponse('GET', '/agent/plugins', { status: 200, headers: res.response.headers, body: res.data });
  });
});

forEachDatabase('agent boot', (t) => {
  it('refuses to build the app on a features map that cannot be honoured', async () => {
    const config = configWith({ AGENT_FEATURES_FILE: '/nonexistent/hearth-features.json' });
    let err: unknown;
    try {
      await createHearth({ config, db: t.db, logger: createLogger(config) });
    } catch (e) {
      err = e;
    }
    expect((err as Error)?.message).to.match(/AGENT_FEATURES_FILE \(\/nonexistent\/hearth-features.json\): cannot be read/);
  });

  it('warns about an unknown features key and still serves', async () => {
    const server = await startTestServer(t.db, { AGENT_FEATURES: '{"user-prefs": false}' });
    try {
      const key = await createTestKey(t.db, { scopes: ['agent:read'] });
      const res = await listAgentPlugins({ client: server.client, auth: key });
      expect(res.data?.unknownFeatureKeys).to.deep.equal(['user-prefs']);
      expect(res.data?.loaded.map((p) => p.manifest.name)).to.deep.equal(['user-preferences']);
    } finally {
      await server.stop();
    }
  });
});
