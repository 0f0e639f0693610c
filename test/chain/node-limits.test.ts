// The embedded node's limits, over raw HTTP/2 as any gRPC client sends: a Cosmos node's (grpc-go)
// 4 MiB per received message, before and after gzip, and a call cut at its deadline while its
// message is still arriving (issue: a 306 KB gzip frame had unzipped to 300 MB in memory, and a
// half-sent message held its stream open for good).
import { connect, type ClientHttp2Session } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { create, toBinary } from '@bufbuild/protobuf';
import { QueryClaimListRequestSchema, QueryCollectionRequestSchema } from '../../generated/proto/ixo/claims/v1beta1/query_pb.ts';
import { grpcMessageOnTheWire, MAX_MESSAGE_BYTES } from '../../src/chain/node/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { onTheClock } from '../helpers/fake-clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const PARAMS = '/ixo.token.v1beta1.Query/Params';
const REQUEST_DEADLINE_MS = 800;

interface Outcome {
  status?: string;
  message?: string;
  /** grpc-message as sent. */
  raw?: string;
  /** When the status arrived. */
  ms: number;
  /** When the stream closed. */
  closedMs: number;
}

/**
 * Sends `frames` (then ends the request when `end`) and reads the call's grpc-status, from trailers
 * or a trailers-only answer. Its times are a fake clock's when one is installed (onTheClock).
 */
function call(session: ClientHttp2Session, frames: Buffer[], opts: { end: boolean; headers?: Record<string, string>; path?: string }): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': opts.path ?? PARAMS, 'content-type': 'application/grpc', te: 'trailers', ...opts.headers });
    let status: string | undefined;
    let message: string | undefined;
    let raw: string | undefined;
    let ms = -1;
    const read = (h: Record<string, string | string[] | undefined>) => {
      if (h['grpc-status'] !== undefined) {
        status = String(h['grpc-status']);
        raw = String(h['grpc-message'] ?? '');
        message = decodeURIComponent(raw);
        ms = Date.now() - started;
      }
    };
    stream.on('response', read);
    stream.on('trailers', read);
    stream.on('data', () => {});
    stream.on('close', () => resolve({ status, message, raw, ms, closedMs: Date.now() - started }));
    stream.on('error', reject);
    for (const f of frames) stream.write(f);
    if (opts.end) stream.end();
  });
}

/** A gRPC message frame: compressed flag, length, bytes. */
const frame = (bytes: Buffer, compressed = false, length = bytes.length) => {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed ? 1 : 0, 0);
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, bytes]);
};

describe('the embedded node holds a Cosmos node’s limits', function () {
  this.timeout(20_000);
  let t: TestDatabase & { drop(): Promise<void> };
  let server: TestServer;
  let session: ClientHttp2Session;

  /** A call with the node's deadlines and the call's times on the fake clock (test/helpers/fake-clock.ts). */
  const clockedCall = (...args: Parameters<typeof call>) => onTheClock(() => call(...args), 10 * REQUEST_DEADLINE_MS);

  before(async () => {
    t = await createTestDatabase('sqlite');
    server = await startTestServer(t.db, { REQUEST_DEADLINE_MS: String(REQUEST_DEADLINE_MS) });
    session = connect(`http://127.0.0.1:${server.hearth.app.locals.chainGrpcPort}`);
  });
  after(async () => {
    session?.close();
    await server?.stop();
    await t?.drop();
  });

  it('answers a call within the limits', async () => {
    expect(await call(session, [frame(Buffer.alloc(0))], { end: true })).to.include({ status: '0' });
  });

  it('RESOURCE_EXHAUSTED for a message over 4 MiB, refused on its length before its bytes are taken', async () => {
    const over = await clockedCall(session, [frame(Buffer.alloc(16), false, MAX_MESSAGE_BYTES + 1)], { end: false });
    expect(over.status).to.equal('8');
    expect(over.ms).to.be.lessThan(REQUEST_DEADLINE_MS);
    // Answered, the stream is reset so the client stops sending, not held to the deadline.
    expect(over.closedMs).to.be.lessThan(REQUEST_DEADLINE_MS / 2);
  });

  it('RESOURCE_EXHAUSTED for a gzip message that unzips past 4 MiB (a 5 KB frame of 5 MiB of zeros)', async () => {
    const bomb = gzipSync(Buffer.alloc(MAX_MESSAGE_BYTES + 1024 * 1024));
    expect(bomb.length).to.be.lessThan(10_000);
    const res = await call(session, [frame(bomb, true)], { end: true, headers: { 'grpc-encoding': 'gzip' } });
    expect(res.status).to.equal('8');
    expect(res.message).to.match(/larger than configured readMaxBytes/);
  });

  it('DEADLINE_EXCEEDED at grpc-timeout for a message that stops arriving, and its stream closed', async () => {
    const res = await clockedCall(session, [frame(Buffer.alloc(10), false, 1000).subarray(0, 15)], { end: false, headers: { 'grpc-timeout': '200m' } });
    expect(res.status).to.equal(String(4));
    expect(res.ms).to.be.within(150, REQUEST_DEADLINE_MS);
  });

  it('without a grpc-timeout (or a longer one), at REQUEST_DEADLINE_MS', async () => {
    for (const headers of [{}, { 'grpc-timeout': '10S' }] as Record<string, string>[]) {
      const res = await clockedCall(session, [frame(Buffer.alloc(10), false, 1000).subarray(0, 15)], { end: false, headers });
      expect(res.status).to.equal('4');
      expect(res.ms).to.be.within(REQUEST_DEADLINE_MS - 50, REQUEST_DEADLINE_MS + 1000);
    }
    // The session is still good for the next call.
    expect(await call(session, [frame(Buffer.alloc(0))], { end: true })).to.include({ status: '0' });
    expect(session.destroyed).to.equal(false);
  });
});

describe('grpc-message as the gRPC spec writes it', () => {
  let t: TestDatabase & { drop(): Promise<void> };
  let server: TestServer;
  before(async () => {
    t = await createTestDatabase('sqlite');
    server = await startTestServer(t.db);
  });
  after(async () => {
    await server?.stop();
    await t?.drop();
  });

  it('percent-encodes only bytes outside 0x20-0x7E and %: grpc-js (decodeURI) had shown %2C for every comma', async () => {
    expect(grpcMessageOnTheWire('invalid request, either offset or key is expected, got both')).to.equal('invalid request, either offset or key is expected, got both');
    expect(grpcMessageOnTheWire('100% kuni é\n')).to.equal('100%25 kuni %C3%A9%0A');
    const session = connect(`http://127.0.0.1:${server.hearth.app.locals.chainGrpcPort}`);
    try {
      const both = toBinary(QueryClaimListRequestSchema, create(QueryClaimListRequestSchema, { pagination: { key: new Uint8Array([49]), offset: 1n } }));
      const res = await call(session, [frame(Buffer.from(both))], { end: true, path: '/ixo.claims.v1beta1.Query/ClaimList' });
      expect(res.status).to.equal('3');
      expect(res.raw).to.equal('invalid request, either offset or key is expected, got both');
      expect(decodeURI(res.raw!)).to.equal(res.raw);
      // A NOT_FOUND names the id asked for, cut short: a 70,000-character id had reset the stream without a status.
      const long = toBinary(QueryCollectionRequestSchema, create(QueryCollectionRequestSchema, { id: 'x'.repeat(70_000) }));
      const notFound = await call(session, [frame(Buffer.from(long))], { end: true, path: '/ixo.claims.v1beta1.Query/Collection' });
      expect(notFound.status).to.equal('5');
      expect(notFound.message!.length).to.be.at.most(500);
      expect(notFound.message).to.match(/…$/);
    } finally {
      session.close();
    }
  });
});
