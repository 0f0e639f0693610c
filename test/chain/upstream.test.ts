// The gateway in front of another node (CHAIN_GRPC_URL): a fake gRPC node answering errors, a
// slow node, a node that drops the connection, a silent socket and nothing listening at all.
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { create } from '@bufbuild/protobuf';
import { embeddedUpstream } from '../../src/chain/gateway/upstream.ts';
import { ClaimsQuery, EntityQuery, TokenQuery } from '../../src/chain/services.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const TIMEOUT_MS = 300;

function fakeNode(routes: (router: ConnectRouter) => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = createH2Server(connectNodeAdapter({ routes }));
  return listenH2(server);
}

function listenH2(server: Http2Server): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sessions) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

const CODES: Record<string, Code> = {
  'not-found': Code.NotFound,
  canceled: Code.Canceled,
  unknown: Code.Unknown,
  'invalid-argument': Code.InvalidArgument,
  'already-exists': Code.AlreadyExists,
  'permission-denied': Code.PermissionDenied,
  'resource-exhausted': Code.ResourceExhausted,
  'failed-precondition': Code.FailedPrecondition,
  aborted: Code.Aborted,
  'out-of-range': Code.OutOfRange,
  internal: Code.Internal,
  unavailable: Code.Unavailable,
  'data-loss': Code.DataLoss,
  unauthenticated: Code.Unauthenticated,
};

forEachDatabase('chain gateway against an upstream gRPC node', (t) => {
  let upstream: { url: string; close(): Promise<void> };
  let server: TestServer;

  before(async () => {
    // The fake node implements a few methods; every other one is UNIMPLEMENTED, as on a
    // node built without that module.
    upstream = await fakeNode((router) => {
      router.service(EntityQuery, {
        async entity(req, ctx) {
          if (req.id === 'slow') {
            // Answers only when the caller has given up.
            await new Promise((r) => ctx.signal.addEventListener('abort', r));
            return {};
          }
          const code = CODES[req.id];
          if (code !== undefined) throw new ConnectError(`fake ${req.id}`, code);
          return { entity: { id: req.id, type: 'Device', status: 3 } };
        },
      });
      router.service(ClaimsQuery, {
        async params() {
          return { params: { collectionSequence: 7n, ixoAccount: 'ixo1fake', networkFeePercentage: '100000000000000000', nodeFeePercentage: '5000000000000000', intentSequence: 2n } };
        },
      });
    });
    server = await startTestServer(t.db, { CHAIN_GRPC_URL: upstream.url, CHAIN_GRPC_TIMEOUT_MS: String(TIMEOUT_MS) });
  });

  after(async () => {
    await server?.stop();
    await upstream?.close();
  });

  const get = async (path: string) => {
    const res = await fetch(server.baseUrl + path);
    return { status: res.status, body: (await res.json()) };
  };

  it('renders what the upstream node answers', async () => {
    const res = await get('/chain/entity/did:ixo:entity:abc');
    expect(res.status).to.equal(200);
    expect(res.body.entity).to.include({ id: 'did:ixo:entity:abc', type: 'Device', status: 3, start_date: null, entity_verified: false });
    // nullable=false upstream: an unset document renders as an empty one, as the node itself would.
    expect(res.body.iidDocument).to.include({ id: '', alsoKnownAs: '', metadata: null });
  });

  it('renders LegacyDec params of the upstream with 18 decimal places', async () => {
    const res = await get('/chain/claims/params');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      params: {
        collection_sequence: '7',
        ixo_account: 'ixo1fake',
        network_fee_percentage: '0.100000000000000000',
        node_fee_percentage: '0.005000000000000000',
        intent_sequence: '2',
      },
    });
  });

  it('answers 501 with code 12 when the upstream does not implement the method', async () => {
    const res = await get('/chain/token/params');
    expect(res.status).to.equal(501);
    expect(res.body.code).to.equal(12);
    expect(res.body.details).to.deep.equal([]);
  });

  it('passes NOT_FOUND through as 404 with the upstream message', async () => {
    const res = await get('/chain/entity/not-found');
    expect(res).to.deep.equal({ status: 404, body: { code: 5, message: 'fake not-found', details: [] } });
  });

  const table: [string, number, number][] = [
    ['canceled', 408, 1],
    ['unknown', 500, 2],
    ['invalid-argument', 400, 3],
    ['already-exists', 409, 6],
    ['permission-denied', 403, 7],
    ['resource-exhausted', 429, 8],
    ['failed-precondition', 400, 9],
    ['aborted', 409, 10],
    ['out-of-range', 400, 11],
    ['internal', 500, 13],
    ['unavailable', 503, 14],
    ['data-loss', 500, 15],
    ['unauthenticated', 401, 16],
  ];
  for (const [name, status, code] of table) {
    it(`maps upstream ${name} to HTTP ${status} keeping gRPC code ${code}`, async () => {
      const res = await get(`/chain/entity/${name}`);
      expect(res.status).to.equal(status);
      expect(res.body).to.deep.equal({ code, message: `fake ${name}`, details: [] });
    });
  }

  it('answers 504 with code 4 when the upstream is slower than CHAIN_GRPC_TIMEOUT_MS', async () => {
    const res = await get('/chain/entity/slow');
    expect(res.status).to.equal(504);
    expect(res.body.code).to.equal(4);
  });

  it('keeps answering after a timed-out call', async () => {
    expect((await get('/chain/entity/did:ixo:entity:after')).status).to.equal(200);
  });
});

forEachDatabase('chain gateway with an unreachable upstream', (t) => {
  let dropper: { url: string; close(): Promise<void> };
  let silent: TcpServer;
  let silentUrl: string;
  const sockets = new Set<Socket>();
  let closedPortUrl: string;

  before(async () => {
    // Accepts HTTP/2, then drops the connection as soon as a call arrives.
    const h2 = createH2Server();
    h2.on('stream', (stream) => stream.session?.destroy());
    dropper = await listenH2(h2);
    // Accepts TCP and never answers.
    silent = createTcpServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    // A port that was just free: nothing listens there.
    const probe = createTcpServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    closedPortUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise<void>((r) => probe.close(() => r()));
  });

  after(async () => {
    await dropper?.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  });

  async function getVia(url: string, path: string) {
    const server = await startTestServer(t.db, { CHAIN_GRPC_URL: url, CHAIN_GRPC_TIMEOUT_MS: String(TIMEOUT_MS), RETRY_AFTER_SECONDS: '17' });
    try {
      const res = await fetch(server.baseUrl + path);
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) };
    } finally {
      await server.stop();
    }
  }

  it('answers 503 with code 14 and Retry-After: RETRY_AFTER_SECONDS when the upstream drops the connection', async () => {
    const res = await getVia(dropper.url, '/chain/entity/did:ixo:entity:abc');
    expect(res.status).to.equal(503);
    expect(res.body.code).to.equal(14);
    expect(res.retryAfter).to.equal('17');
  });

  it('answers 503 with code 14 and Retry-After: RETRY_AFTER_SECONDS when nothing listens at CHAIN_GRPC_URL', async () => {
    const res = await getVia(closedPortUrl, '/chain/token/params');
    expect(res.status).to.equal(503);
    expect(res.body.code).to.equal(14);
    expect(res.retryAfter).to.equal('17');
  });

  it('answers 504 with code 4, without Retry-After, when the upstream accepts the connection and stays silent', async () => {
    const res = await getVia(silentUrl, '/chain/token/params');
    expect(res.status).to.equal(504);
    expect(res.body.code).to.equal(4);
    expect(res.retryAfter).to.equal(null);
  });
});

describe('embedded upstream (the in-process node)', () => {
  const tokenParams = TokenQuery.method.params;
  const request = create(tokenParams.input, {});
  const bind = (params: () => Promise<object>) => embeddedUpstream([{ service: TokenQuery, impl: { params } as never }], TIMEOUT_MS);

  it('answers DEADLINE_EXCEEDED when the service is slower than the deadline', async () => {
    // A service that never answers: only the deadline ends the call.
    const upstream = bind(() => new Promise(() => {}));
    const err = await upstream.call(tokenParams, request).then(() => undefined, (e) => e as ConnectError);
    expect(err?.code).to.equal(Code.DeadlineExceeded);
  });

  it('hides an unexpected failure as INTERNAL "internal error", keeping the cause for the log', async () => {
    const upstream = bind(async () => {
      throw new Error('SQLITE_BUSY: database is locked');
    });
    const err = await upstream.call(tokenParams, request).then(() => undefined, (e) => e as ConnectError);
    expect(err?.code).to.equal(Code.Internal);
    expect(err?.rawMessage).to.equal('internal error');
    expect((err?.cause as Error).message).to.contain('SQLITE_BUSY');
  });

  it('answers UNIMPLEMENTED for a method without an implementation', async () => {
    const upstream = embeddedUpstream([], TIMEOUT_MS);
    const err = await upstream.call(tokenParams, request).then(() => undefined, (e) => e as ConnectError);
    expect(err?.code).to.equal(Code.Unimplemented);
  });
});
