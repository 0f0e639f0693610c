// The MCP server at /agent/mcp, driven by the official SDK's client over Streamable HTTP: the
// loaded plugins' tools, a tool call that stores preferences, the preferences as a resource,
// and the errors (bad arguments, unknown tool, scopes, no key). SQLite and PostgreSQL.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { listAgentTools, listAgentToolsAnthropic, listAgentToolsOpenAi } from '../../generated/openapi/sdk.gen.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

const ALICE = 'did:ixo:entity:alice0000000000000000000000000001';

forEachDatabase('agent MCP server', (t) => {
  let server: TestServer;
  let alice: string;
  let readOnly: string;
  const open: Client[] = [];
  before(async () => {
    server = await startTestServer(t.db);
    alice = await createTestKey(t.db, { principalDid: ALICE, scopes: ['agent:read', 'agent:write'] });
    readOnly = await createTestKey(t.db, { principalDid: ALICE, scopes: ['agent:read'] });
  });
  after(async () => {
    for (const c of open) await c.close();
    await server.stop();
  });

  /** One POST to the endpoint as a client would send it, answered with its status, headers and body. */
  async function mcpPost(message: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) {
    const res = await fetch(`${server.baseUrl}/agent/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${opts.key ?? alice}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...opts.headers },
      body: JSON.stringify(message),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) };
  }

  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'hearth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/agent/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    open.push(client);
    return client;
  }

  it('lists the loaded plugins\' tools with their JSON Schemas, as GET /agent/tools does', async () => {
    const client = await connect(alice);
    expect(client.getServerVersion()).to.include({ name: 'hearth-agent' });
    const { tools } = await client.listTools();
    const http = await (await fetch(`${server.baseUrl}/agent/tools`, { headers: { Authorization: `Bearer ${alice}` } })).json();
    expect(tools.map((x) => ({ name: x.name, description: x.description, parameters: x.inputSchema }))).to.deep.equal(http.tools);
    expect(tools.map((x) => x.name)).to.include('set_user_preferences');
  });

  it('calls a tool for the caller, and the preferences it stored read back as a resource', async () => {
    const client = await connect(alice);
    const called = await client.callTool({ name: 'set_user_preferences', arguments: { userName: 'Mama Amina', language: 'sw' } });
    expect(called.isError).to.not.equal(true);
    expect((called.structuredContent as { result: Record<string, unknown> }).result).to.include({ userName: 'Mama Amina', language: 'sw' });

    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).to.deep.equal(['hearth://state/userPreferences/default']);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate)).to.deep.equal(['hearth://state/userPreferences/{roomId}']);
    const read = await client.readResource({ uri: 'hearth://state/userPreferences/default' });
    const content = read.contents[0] as { text: string; mimeType: string };
    expect(content.mimeType).to.equal('application/json');
    expect(JSON.parse(content.text)).to.include({ userName: 'Mama Amina', language: 'sw' });
    // The same record the HTTP API shows.
    const http = await (await fetch(`${server.baseUrl}/user-preferences`, { headers: { Authorization: `Bearer ${alice}` } })).json();
    expect(JSON.parse(content.text)).to.deep.equal(http);
    const otherRoom = await client.readResource({ uri: 'hearth://state/userPreferences/%21kitchen%3Amatrix.org' });
    expect(JSON.parse((otherRoom.contents[0] as { text: string }).text)).to.equal(null);
    // _meta.roomId picks the room a call acts in.
    await client.callTool({ name: 'set_user_preferences', arguments: { tone: 'dry' }, _meta: { roomId: '!kitchen:matrix.org' } });
    const kitchen = await client.readResource({ uri: 'hearth://state/userPreferences/%21kitchen%3Amatrix.org' });
    expect(JSON.parse((kitchen.contents[0] as { text: string }).text)).to.include({ tone: 'dry', userName: null });
  });

  it('a _meta.roomId that is not a room id (empty, too long, not text) is refused and writes nothing, not even to the default room', async () => {
    const client = await connect(alice);
    await client.callTool({ name: 'set_user_preferences', arguments: { tone: 'calm' } });
    const before = await t.db('agent_user_preferences').orderBy('room_id');
    for (const roomId of ['', 'r'.repeat(256), 5, { a: 1 }, null]) {
      let refused: unknown;
      await client.callTool({ name: 'set_user_preferences', arguments: { tone: 'x' }, _meta: { roomId } }).catch((err: unknown) => (refused = err));
      expect(refused, JSON.stringify(roomId)).to.have.property('code', -32602);
    }
    expect(await t.db('agent_user_preferences').orderBy('room_id')).to.deep.equal(before);
    // The longest room id the HTTP routes take is taken here too.
    const longest = await client.callTool({ name: 'set_user_preferences', arguments: { tone: 'warm' }, _meta: { roomId: 'r'.repeat(255) } });
    expect(longest.isError).to.not.equal(true);
  });

  it('bad arguments are a tool error naming the field; an unknown tool or resource is a protocol error', async () => {
    const client = await connect(alice);
    const bad = await client.callTool({ name: 'set_user_preferences', arguments: { tone: 42 } });
    expect(bad.isError).to.equal(true);
    const body = JSON.parse((bad.content as { text: string }[])[0]!.text);
    // A pointer into the call's params, not into an HTTP body.
    expect(body.errors[0]).to.include({ pointer: '/arguments/tone' });
    expect(body.detail).to.include('/arguments/tone').and.not.include('/body');
    let unknown: unknown;
    await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((err: unknown) => (unknown = err));
    expect(String(unknown)).to.match(/no_such_tool/);
    let missing: unknown;
    await client.readResource({ uri: 'hearth://state/nothing/default' }).catch((err: unknown) => (missing = err));
    expect(missing).to.have.property('code', -32002);
    expect(String(missing)).to.match(/No resource/);
    // Inherited names, a bad escape and a room id no request may carry are no resource either (-32002, not an internal error).
    for (const uri of ['hearth://state/constructor/r1', 'hearth://state/__proto__/r1', 'hearth://state/userPreferences/%E0%A4%A', 'hearth://state/userPreferences/a%00b']) {
      let refused: unknown;
      await client.readResource({ uri }).catch((err: unknown) => (refused = err));
      expect(refused, uri).to.have.property('code', -32002);
      expect(String(refused), uri).to.match(/No resource/);
    }
  });

  it('a key without agent:write may list and read but not call tools (403 with the insufficient_scope challenge); no key is 401', async () => {
    const client = await connect(readOnly);
    expect((await client.listTools()).tools.length).to.be.greaterThan(0);
    let refused: unknown;
    await client.callTool({ name: 'set_user_preferences', arguments: { tone: 'dry' } }).catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/agent:write/);
    const call = await mcpPost({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'set_user_preferences', arguments: { tone: 'dry' } } }, { key: readOnly });
    expect(call.status).to.equal(403);
    expect(call.headers.get('www-authenticate')).to.equal('Bearer realm="hearth", error="insufficient_scope", scope="agent:write"');
    expect(call.body).to.include({ status: 403, detail: 'This API key lacks the scope agent:write.' });
    expectContractResponse('post', '/agent/mcp', call);
    const res = await fetch(`${server.baseUrl}/agent/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).to.equal(401);
    expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="hearth"');
    const get = await fetch(`${server.baseUrl}/agent/mcp`, { headers: { Authorization: `Bearer ${alice}` } });
    expect(get.status).to.equal(405);
  });

  it('a page at another Origin is refused 403 (DNS rebinding); the server\'s own loopback origin and listed origins are served', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const port = new URL(server.baseUrl).port;
    // Another host, a rebound name, null, a loopback host other than the Host asked for, another
    // scheme, and a form no browser sends (a trailing slash).
    for (const origin of ['http://evil.example', `http://evil.example:${port}`, 'null', `http://localhost:${port}`, `https://127.0.0.1:${port}`, `http://127.0.0.1:${port}/`]) {
      const res = await mcpPost(ping, { headers: { Origin: origin } });
      expect(res.status, origin).to.equal(403);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(res.body.detail).to.equal(`Pages at ${origin} may not call the MCP endpoint: list the origin in API_CORS_ORIGINS.`);
      expectContractResponse('post', '/agent/mcp', res);
    }
    expect((await mcpPost(ping, { headers: { Origin: server.baseUrl } })).body).to.deep.equal({ result: {}, jsonrpc: '2.0', id: 1 });
    expect((await mcpPost(ping)).status).to.equal(200);
    const listing = await startTestServer(t.db, { API_CORS_ORIGINS: 'https://console.example' });
    try {
      const res = await fetch(`${listing.baseUrl}/agent/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Origin: 'https://console.example' },
        body: JSON.stringify(ping),
      });
      expect(res.status).to.equal(200);
    } finally {
      await listing.stop();
    }
  });

  it('speaks the MCP versions without batching: an older one asked for in initialize is answered with the latest, an older MCP-Protocol-Version header is 400 -32000', async () => {
    const initialize = (protocolVersion: string) => mcpPost({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'probe', version: '1' } } });
    for (const [asked, answered] of [['2025-06-18', '2025-06-18'], ['2025-11-25', '2025-11-25'], ['2025-03-26', '2025-11-25'], ['2024-11-05', '2025-11-25']]) {
      const res = await initialize(asked!);
      expect(res.status, asked).to.equal(200);
      expect(res.body.result.protocolVersion, asked).to.equal(answered);
    }
    const old = await mcpPost({ jsonrpc: '2.0', id: 2, method: 'ping' }, { headers: { 'MCP-Protocol-Version': '2025-03-26' } });
    expect(old.status).to.equal(400);
    expect(old.body).to.deep.include({ jsonrpc: '2.0', id: null });
    expect(old.body.error.code).to.equal(-32000);
    expectContractResponse('post', '/agent/mcp', old);
    expect((await mcpPost({ jsonrpc: '2.0', id: 3, method: 'ping' }, { headers: { 'MCP-Protocol-Version': '2025-06-18' } })).status).to.equal(200);
  });

  it('a body that is not JSON is 400 -32700; a batch, a body no area may store and one that is no JSON-RPC message are 400 -32600, all with id null; params that do not fit the method are -32602 with a readable message', async () => {
    const raw = async (body: string) => {
      const res = await fetch(`${server.baseUrl}/agent/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body,
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    };
    const parse = await raw('{bad');
    expect(parse.status).to.equal(400);
    expect(parse.headers.get('content-type')).to.match(/^application\/json/);
    expect(parse.body).to.deep.equal({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: The request body is not valid JSON.' } });
    expectContractResponse('post', '/agent/mcp', parse);
    const batch = await mcpPost([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(batch.status).to.equal(400);
    expect(batch.body).to.deep.include({ jsonrpc: '2.0', id: null });
    expect(batch.body.error.code).to.equal(-32600);
    expect(batch.body.error.message).to.match(/^Invalid Request: /);
    expectContractResponse('post', '/agent/mcp', batch);
    for (const [contentType, body, status] of [
      ['text/plain', '{"jsonrpc":"2.0","id":1,"method":"ping"}', 415],
      ['application/json; charset=utf-16', '{"jsonrpc":"2.0","id":1,"method":"ping"}', 415],
      ['application/json', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { pad: 'x'.repeat(2_000_000) } } }), 413],
    ] as const) {
      const res = await fetch(`${server.baseUrl}/agent/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${alice}`, 'Content-Type': contentType, Accept: 'application/json, text/event-stream' },
        body,
      });
      const answer = { status: res.status, headers: res.headers, body: await res.json() };
      expect(answer.status, contentType).to.equal(status);
      expect(answer.headers.get('content-type'), contentType).to.match(/^application\/json/);
      expect(answer.body, contentType).to.deep.include({ jsonrpc: '2.0', id: null });
      expect(answer.body.error.code, contentType).to.equal(-32600);
      expectContractResponse('post', '/agent/mcp', answer);
    }
    for (const body of ['{"jsonrpc":"2.0","id":1e400,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":"\\u0000"}}}']) {
      const res = await raw(body);
      expect(res.status, body).to.equal(400);
      expect(res.body.id, body).to.equal(null);
      expect(res.body.error.code, body).to.equal(-32600);
      expect(res.body.error.data.errors[0], body).to.have.property('rule');
      expectContractResponse('post', '/agent/mcp', res);
    }
    for (const message of [{ foo: 1 }, { jsonrpc: '1.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: null, method: 'ping' }]) {
      const res = await mcpPost(message);
      expect(res.status, JSON.stringify(message)).to.equal(400);
      expect(res.body, JSON.stringify(message)).to.deep.equal({
        jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response.' },
      });
      expectContractResponse('post', '/agent/mcp', res);
    }
    const cases: [unknown, RegExp][] = [
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call' }, /^Invalid params: params: /],
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'set_user_preferences', arguments: [1] } }, /^Invalid params: params\.arguments: /],
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { arguments: {} } }, /^Invalid params: params\.name: /],
      [{ jsonrpc: '2.0', id: 7, method: 'resources/read', params: {} }, /^Invalid params: params\.uri: /],
    ];
    for (const [message, text] of cases) {
      const res = await mcpPost(message);
      expect(res.status, JSON.stringify(message)).to.equal(200);
      expect(res.body.id).to.equal(7);
      expect(res.body.error.code, JSON.stringify(message)).to.equal(-32602);
      expect(res.body.error.message, JSON.stringify(message)).to.match(text);
      expect(res.body.error.message).to.not.match(/expected.*\n|\[\s*\{/);
    }
    // Errors the handlers raise carry their message once, without the SDK's "MCP error <code>: ".
    const unknown = await mcpPost({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
    expect(unknown.body.error).to.deep.equal({ code: -32602, message: 'No tool named "no_such_tool" is loaded.' });
  });

  const toolCall = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'set_user_preferences', arguments: { tone: 'dry' } } };
  const resourceRead = { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'hearth://state/userPreferences/default' } };

  /** `messages` on a server of its own with a fresh key (looked up once, then cached), after `meanwhile` ran. */
  async function callWhile(env: Record<string, string>, meanwhile: (db: ReturnType<typeof t.open>) => Promise<() => Promise<void>>, messages: unknown[] = [toolCall]) {
    const db = t.open();
    const alone = await startTestServer(db, env);
    const post = (key: string, message: unknown) =>
      fetch(`${alone.baseUrl}/agent/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify(message),
      });
    try {
      const key = await createTestKey(db, { principalDid: ALICE, scopes: ['agent:read', 'agent:write'] });
      expect((await post(key, { jsonrpc: '2.0', id: 1, method: 'ping' })).status).to.equal(200);
      const after = await meanwhile(db);
      try {
        const answers = await Promise.all(messages.map((m) => post(key, m)));
        return await Promise.all(answers.map(async (res) => ({ status: res.status, body: await res.json() })));
      } finally {
        await after();
      }
    } finally {
      await alone.stop();
    }
  }

  it('the database past its deadline: a tool call and a resource read are a retryable JSON-RPC error with the time to wait, never the database\'s own words', async () => {
    const answers = await callWhile({ RETRY_AFTER_SECONDS: '9', DB_QUERY_TIMEOUT_MS: '500' }, async () => {
      // Another connection holds the table (PostgreSQL) or the write lock (SQLite).
      const holder = t.open();
      let release!: () => void;
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holding = inTransaction(holder, async (trx) => {
        if (t.kind === 'postgres') await trx.raw('lock table agent_user_preferences in access exclusive mode');
        else await trx.raw('delete from agent_user_preferences where 0');
        locked();
        await new Promise<void>((r) => (release = r));
      });
      await isLocked;
      return async () => {
        release();
        await holding;
        await holder.destroy();
      };
    }, [toolCall, resourceRead]);
    const unavailable = { code: -32003, message: 'The service is temporarily unavailable; retry later.', data: { retryAfterSeconds: 9 } };
    expect(answers[0]).to.deep.equal({ status: 200, body: { jsonrpc: '2.0', id: 2, error: unavailable } });
    // PostgreSQL's lock holds readers too: a resource read is not told "no preferences" (null), as a
    // turn's context would be. SQLite's write lock lets readers through (WAL).
    if (t.kind === 'postgres') expect(answers[1]).to.deep.equal({ status: 200, body: { jsonrpc: '2.0', id: 3, error: unavailable } });
    else expect(answers[1]!.body.result.contents).to.have.length(1);
  });

  it('any other failure is "Internal error", without its cause\'s text', async () => {
    const [answer] = await callWhile({}, async (db) => {
      await db.destroy();
      return async () => {};
    });
    expect(answer!.body).to.deep.equal({ jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'Internal error' } });
  });

  it("a tool result's text block is its structured content serialized", async () => {
    const res = await mcpPost({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'set_user_preferences', arguments: { emoji: 'none' } } });
    expect(res.status).to.equal(200);
    expect(JSON.parse(res.body.result.content[0].text)).to.deep.equal(res.body.result.structuredContent);
    expect(res.body.result.structuredContent.result).to.include({ emoji: 'none' });
    expectContractResponse('post', '/agent/mcp', res);
  });

  it('GET /agent/tools/openai and /agent/tools/anthropic give the same tools in those APIs\' shapes', async () => {
    const plain = (await listAgentTools({ client: server.client, auth: readOnly })).data!.tools;
    const openai = await listAgentToolsOpenAi({ client: server.client, auth: readOnly });
    expectContractResponse('get', '/agent/tools/openai', { status: 200, headers: openai.response.headers, body: openai.data });
    expect(openai.data!.tools).to.deep.equal(plain.map((t) => ({ type: 'function', function: t })));
    const anthropic = await listAgentToolsAnthropic({ client: server.client, auth: readOnly });
    expectContractResponse('get', '/agent/tools/anthropic', { status: 200, headers: anthropic.response.headers, body: anthropic.data });
    expect(anthropic.data!.tools).to.deep.equal(plain.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })));
    expect((await listAgentToolsOpenAi({ client: server.client })).response.status).to.equal(401);
  });
});
