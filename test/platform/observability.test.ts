// Request ids and trace context, Prometheus metrics and CORS for areas A and D (issue #19, item 3).
import { expect } from 'chai';
import { parseTraceparent } from '../../src/platform/http/request-context.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

describe('traceparent parsing (W3C Trace Context)', () => {
  it('takes version 00 with non-zero ids, and nothing else', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).to.deep.equal({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', sampled: true });
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')).to.deep.include({ sampled: false });
    for (const bad of [
      undefined,
      '',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
    ]) {
      expect(parseTraceparent(bad), String(bad)).to.equal(undefined);
    }
  });
});

forEachDatabase('request ids, trace context and metrics', (t) => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(t.db, { API_CORS_ORIGINS: 'https://app.example' });
    key = await createTestKey(t.db);
  });
  after(() => server.stop());

  it('echoes a caller\'s X-Request-Id, makes one for a missing or unusable one, and puts it in problem bodies', async () => {
    const given = await fetch(`${server.baseUrl}/v1/claims`, { headers: { 'X-Request-Id': 'partner-req-42' } });
    expect(given.status).to.equal(401);
    expect(given.headers.get('x-request-id')).to.equal('partner-req-42');
    const body = await given.json();
    expect(body).to.include({ requestId: 'partner-req-42' });
    expect(body.traceId).to.match(/^[0-9a-f]{32}$/);
    expectContractResponse('GET', '/v1/claims', { status: 401, headers: given.headers, body });
    for (const bad of ['has spaces in it', 'x'.repeat(129), '']) {
      const res = await fetch(`${server.baseUrl}/`, { headers: bad ? { 'X-Request-Id': bad } : {} });
      expect(res.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    }
  });

  it('continues a caller\'s trace (same trace id, Hearth\'s own span) and starts one otherwise', async () => {
    const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const res = await fetch(`${server.baseUrl}/health`, { headers: { traceparent: parent } });
    const [version, traceId, spanId, flags] = res.headers.get('traceparent')!.split('-');
    expect([version, traceId, flags]).to.deep.equal(['00', '4bf92f3577b34da6a3ce929d0e0e4736', '01']);
    expect(spanId).to.match(/^[0-9a-f]{16}$/).and.not.equal('00f067aa0ba902b7');
    const fresh = await fetch(`${server.baseUrl}/health`, { headers: { traceparent: 'garbage' } });
    expect(parseTraceparent(fresh.headers.get('traceparent')!)?.traceId).to.match(/^[0-9a-f]{32}$/).and.not.equal('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('GET /metrics counts requests by operation template and status, and reports claims, USSD hops and the pool', async () => {
    await fetch(`${server.baseUrl}/v1/claims/kpt_0000000000000000000000000000abcd`, { headers: { Authorization: `Bearer ${key}` } });
    await fetch(`${server.baseUrl}/v1/claims`);
    await fetch(`${server.baseUrl}/api/ussd`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ sessionId: 'metrics-1', serviceCode: '*384#', phoneNumber: '+254712345678', text: '' }),
    });
    await fetch(`${server.baseUrl}/chain/token/params`);
    const res = await fetch(`${server.baseUrl}/metrics`);
    expect(res.status).to.equal(200);
    const text = await res.text();
    expectContractResponse('GET', '/metrics', { status: 200, headers: res.headers, body: text });
    // A query no area may take (NUL) is a documented 400 here too, as on the JSON-LD context.
    for (const path of ['/metrics?q=%00', '/v1/contexts/kpt-v1.jsonld?q=%00']) {
      const refused = await fetch(`${server.baseUrl}${path}`);
      expect(refused.status, path).to.equal(400);
      expectContractResponse('GET', path.replace(/\?.*/, ''), { status: 400, headers: refused.headers, body: await refused.json() });
    }
    expect(text).to.include('hearth_http_requests_total{method="GET",route="/v1/claims/{id}",status="404"} 1');
    expect(text).to.match(/hearth_http_requests_total\{method="GET",route="\/v1\/claims",status="401"\} [1-9]/);
    expect(text).to.include('hearth_http_requests_total{method="GET",route="chain",status="200"} 1');
    expect(text).to.match(/hearth_http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/api\/ussd",status="200"\}/);
    expect(text).to.include('hearth_ussd_hops_total{reply="CON"} 1');
    expect(text).to.match(/hearth_ussd_sessions_active \d+/);
    expect(text).to.match(/hearth_db_pool_connections\{state="used"\} \d+/);
    expect(text).to.match(/# TYPE hearth_db_round_trips_total counter\nhearth_db_round_trips_total [1-9]\d*\n/);
    expect(text).to.include('# TYPE hearth_kpt_claims gauge');
    // Every status has its series, 0 without claims: a series that vanished would misread as no data.
    for (const status of ['pending', 'verified', 'rejected']) expect(text).to.match(new RegExp(`^hearth_kpt_claims\\{status="${status}"\\} \\d+$`, 'm'));
    // ids never become labels
    expect(text).not.to.include('abcd');
  });

  it('/metrics still answers with the database gone: gauges read from it keep their last values and the misses are counted', async () => {
    const db = t.open();
    const alone = await startTestServer(db);
    try {
      const before = await (await fetch(`${alone.baseUrl}/metrics`)).text();
      expect(before).to.match(/hearth_ussd_sessions_active \d+/);
      await db.destroy();
      const res = await fetch(`${alone.baseUrl}/metrics`);
      expect(res.status).to.equal(200);
      const text = await res.text();
      expect(text).to.match(/hearth_db_pool_connections\{state="used"\} \d+/);
      expect(text).to.include('hearth_metric_read_failures_total{metric="hearth_kpt_claims"} 1');
      expect(text).to.include('hearth_metric_read_failures_total{metric="hearth_ussd_sessions_active"} 1');
      expect(text.match(/hearth_ussd_sessions_active \d+/)?.[0]).to.equal(before.match(/hearth_ussd_sessions_active \d+/)?.[0]);
    } finally {
      await alone.stop();
    }
  });

  it('API_CORS_ORIGINS: a listed origin gets its preflight and readable answers; another origin gets neither', async () => {
    const preflight = await fetch(`${server.baseUrl}/v1/claims`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
    });
    expect(preflight.status).to.equal(204);
    expect(preflight.headers.get('access-control-allow-origin')).to.equal('https://app.example');
    // Every method of the contract's operations (DELETE: a webhook subscription).
    expect(preflight.headers.get('access-control-allow-methods')?.split(', ')).to.include.members(['GET', 'POST', 'PATCH', 'DELETE']);
    expect(preflight.headers.get('access-control-allow-headers')).to.include('Authorization');
    // An MCP client in a page at a listed origin sends MCP-Protocol-Version after initialize.
    const mcp = await fetch(`${server.baseUrl}/agent/mcp`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type,mcp-protocol-version' },
    });
    expect(mcp.status).to.equal(204);
    expect(mcp.headers.get('access-control-allow-headers')!.toLowerCase().split(', ')).to.include.members(['authorization', 'content-type', 'mcp-protocol-version']);
    const get = await fetch(`${server.baseUrl}/agent/tools`, { headers: { Origin: 'https://app.example' } });
    expect(get.headers.get('access-control-allow-origin')).to.equal('https://app.example');
    expect(get.headers.get('access-control-expose-headers')).to.include('X-Request-Id');
    expect(get.headers.get('vary')).to.include('Origin');
    const other = await fetch(`${server.baseUrl}/v1/claims`, { method: 'OPTIONS', headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' } });
    expect(other.status).to.equal(405);
    expect(other.headers.get('access-control-allow-origin')).to.equal(null);
    // area B is for telecom gateways, never browsers
    const ussd = await fetch(`${server.baseUrl}/api/ussd/sessions`, { headers: { Origin: 'https://app.example' } });
    expect(ussd.headers.get('access-control-allow-origin')).to.equal(null);
  });
});

forEachDatabase('GET /metrics switches', (t) => {
  it('METRICS_TOKEN gates it (401 problem+json without the token); METRICS_ENABLED=false removes it (404)', async () => {
    const gated = await startTestServer(t.db, { METRICS_TOKEN: 'scrape-token-0123456789' });
    try {
      const anonymous = await fetch(`${gated.baseUrl}/metrics`);
      expect(anonymous.status).to.equal(401);
      expectContractResponse('GET', '/metrics', { status: 401, headers: anonymous.headers, body: await anonymous.json() });
      const wrong = await fetch(`${gated.baseUrl}/metrics`, { headers: { Authorization: 'Bearer scrape-token-012345678X' } });
      expect(wrong.status).to.equal(401);
      const ok = await fetch(`${gated.baseUrl}/metrics`, { headers: { Authorization: 'Bearer scrape-token-0123456789' } });
      expect(ok.status).to.equal(200);
    } finally {
      await gated.stop();
    }
    const off = await startTestServer(t.db, { METRICS_ENABLED: 'false' });
    try {
      expect((await fetch(`${off.baseUrl}/metrics`)).status).to.equal(404);
    } finally {
      await off.stop();
    }
  });
});
