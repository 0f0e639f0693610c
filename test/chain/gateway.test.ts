// Routing, query parameters, prefixes, gating, CORS and disabled methods of the gateway. The
// upstream is a fake node that echoes what it was asked, so each test sees which method the
// route reached and with which request.
import { request as httpRequest } from 'node:http';
import { createServer as createH2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import request from 'supertest';
import { toJsonString } from '@bufbuild/protobuf';
import { DurationSchema } from '@bufbuild/protobuf/wkt';
import { BadRequestSchema, ErrorInfoSchema } from '../../generated/proto/google/rpc/error_details_pb.ts';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createGrpcTransport } from '@connectrpc/connect-node';
import { ClaimsQuery, EntityQuery, IidQuery, TokenQuery } from '../../src/chain/services.ts';
import { QueryClaimListRequestSchema, QueryCollectionListRequestSchema } from '../../generated/proto/ixo/claims/v1beta1/query_pb.ts';
import { QueryEntityListRequestSchema } from '../../generated/proto/ixo/entity/v1beta1/query_pb.ts';
import { ConfigError, configWith } from '../../src/config.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

const NOT_IMPLEMENTED = { code: 12, message: 'Not Implemented', details: [] };
const NOT_FOUND = { code: 5, message: 'Not Found', details: [] };
/** Paths under the prefix that no route has, whatever the method (a final ":abc" is a verb alone). */
const UNKNOWN_ROUTES = ['/chain/nope', '/chain', '/chain/', '/chain/entity/a/b/c', '/chain/Entity/params', '/chain/claims/claim', '/chain/entity/:abc', '/chain/token/params/'];

/** A node whose answers name the method and echo the request. */
async function echoNode(): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const server = createH2Server(
    connectNodeAdapter({
      routes(router) {
        router.service(EntityQuery, {
          params: () => (calls.push('entity.Params'), { params: { nftContractAddress: 'Params' } }),
          entity: (req) => (calls.push('Entity'), { entity: { id: req.id, type: 'Entity' } }),
          entityMetaData: (req) => (calls.push('EntityMetaData'), { entity: { id: req.id, type: 'EntityMetaData' } }),
          entityIidDocument: (req) => (calls.push('EntityIidDocument'), { iidDocument: { id: req.id } }),
          entityVerified: (req) => (calls.push('EntityVerified'), { entityVerified: req.id === 'did:ixo:entity:verified' }),
          entityList: (req) => (calls.push('EntityList'), { entities: [{ id: toJsonString(QueryEntityListRequestSchema, req) }] }),
        });
        router.service(IidQuery, {
          iidDocuments: () => (calls.push('IidDocuments'), { iidDocuments: [] }),
          iidDocument: (req) => (calls.push('IidDocument'), { iidDocument: { id: req.id } }),
        });
        router.service(ClaimsQuery, {
          collection: (req) => (calls.push('Collection'), { collection: { id: req.id } }),
          collectionList: (req) => (calls.push('CollectionList'), { collections: [{ id: toJsonString(QueryCollectionListRequestSchema, req) }] }),
          claim: (req) => {
            calls.push('Claim');
            if (req.id === 'with-details') {
              throw new ConnectError('claim with-details is disputed', Code.FailedPrecondition, undefined, [
                { desc: ErrorInfoSchema, value: { reason: 'CLAIM_DISPUTED', domain: 'claims.ixo.world', metadata: { claim: 'with-details' } } },
                { desc: BadRequestSchema, value: { fieldViolations: [{ field: 'id', description: 'disputed' }] } },
              ]);
            }
            // A detail of a type no gateway registry knows (grpc-gateway cannot marshal it either).
            if (req.id === 'odd-details') throw new ConnectError('odd', Code.Internal, undefined, [{ desc: DurationSchema, value: { seconds: 1n } }]);
            // A status code outside gRPC's table, as a node may send one.
            if (req.id === 'code-99') throw new ConnectError('beyond the table: 100%', 99 as Code);
            return { claim: { claimId: req.id } };
          },
          disputeBySubject: (req) => (calls.push('DisputeBySubject'), { dispute: { subjectId: req.subjectId, targetRole: req.targetRole } }),
          intent: (req) => (calls.push('Intent'), { intent: { id: req.id, agentAddress: req.agentAddress, collectionId: req.collectionId } }),
          claimList: (req) => (calls.push('ClaimList'), { claims: [{ claimId: toJsonString(QueryClaimListRequestSchema, req) }] }),
        });
        router.service(TokenQuery, {
          params: () => (calls.push('token.Params'), { params: { ixo1155ContractCode: 9n } }),
          tokenDoc: (req) => (calls.push('TokenDoc'), { tokenDoc: { minter: req.minter, contractAddress: req.contractAddress } }),
        });
      },
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  server.on('session', (s) => sessions.add(s));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((r) => {
      for (const s of sessions) s.destroy();
      server.close(() => r());
    }),
  };
}

forEachDatabase('chain gateway routing', (t) => {
  let node: Awaited<ReturnType<typeof echoNode>>;
  let server: TestServer;
  const get = async (path: string, init?: RequestInit) => {
    const res = await fetch(server.baseUrl + path, init);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  before(async () => {
    node = await echoNode();
    server = await startTestServer(t.db, { CHAIN_GRPC_URL: node.url });
  });
  after(async () => {
    await server?.stop();
    await node?.close();
  });

  describe('routes from the annotations', () => {
    it('a literal segment beats a variable: /entity/params is Params, not Entity "params"', async () => {
      const res = await get('/chain/entity/params');
      expect(res.status).to.equal(200);
      expect(res.body.params.nftContractAddress).to.equal('Params');
    });

    it('writes strings as Go encoding/json does (<, >, &, U+2028, U+2029 escaped), as application/json without charset', async () => {
      const res = await fetch(`${server.baseUrl}/chain/entity/${encodeURIComponent('a&<b>\u2028\u2029')}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('application/json');
      const text = await res.text();
      expect(text).to.contain('"id":"a\\u0026\\u003cb\\u003e\\u2028\\u2029"');
      expect(res.headers.get('content-length')).to.equal(String(Buffer.byteLength(text)));
      const unknown = await fetch(`${server.baseUrl}/chain/nope`);
      expect(unknown.headers.get('content-type')).to.equal('application/json');
      expect(await unknown.text()).to.equal(JSON.stringify(NOT_FOUND));
      const odd = await fetch(`${server.baseUrl}/chain/claims/claim/odd-details`);
      expect(odd.headers.get('content-type')).to.equal('application/json');
    });

    it('takes a DID with colons as one path segment, raw or percent-encoded', async () => {
      expect((await get('/chain/entity/did:ixo:entity:abc')).body.entity).to.include({ id: 'did:ixo:entity:abc', type: 'Entity' });
      expect((await get('/chain/entity/did%3Aixo%3Aentity%3Aabc')).body.entity.id).to.equal('did:ixo:entity:abc');
    });

    it('does not route a trailing slash (grpc-gateway v1): no route (404), or an empty last segment bound to a variable', async () => {
      for (const path of ['/chain/token/params/', '/chain/entity/did:ixo:entity:abc/', '/chain/claims/claims/']) {
        const res = await get(path);
        expect(res.status, path).to.equal(404);
        expect(res.body, path).to.deep.equal(NOT_FOUND);
      }
      expect((await get('/chain/claims/claim/')).body.claim.claim_id).to.equal('');
    });

    it('drops a final ":" from the path before matching, as grpc-gateway v1 splits off an empty custom verb', async () => {
      expect((await get('/chain/entity/params:')).body.params.nftContractAddress).to.equal('Params');
      expect((await get('/chain/token/params%3A')).body.params.ixo1155_contract_code).to.equal('9');
      expect((await get('/chain/entity/did:ixo:entity:abc:')).body.entity.id).to.equal('did:ixo:entity:abc');
      // Only the last ":" is read as the verb's; any other verb is put back.
      expect((await get('/chain/entity/::')).body.entity.id).to.equal(':');
      expect((await get('/chain/entity/:a:b')).body.entity.id).to.equal(':a:b');
      expect((await get('/chain/entity/params:x')).body.entity.id).to.equal('params:x');
    });

    it('reaches every annotated method', async () => {
      expect((await get('/chain/entity/did:x/metadata')).body.entity.type).to.equal('EntityMetaData');
      expect((await get('/chain/entity/did:x/iiddocument')).body.iidDocument.id).to.equal('did:x');
      expect((await get('/chain/entity/did:ixo:entity:verified/verified')).body).to.deep.equal({ entity_verified: true });
      expect((await get('/chain/entity')).status).to.equal(200);
      expect((await get('/chain/did/dids')).body).to.deep.equal({ iidDocuments: [], pagination: null });
      expect((await get('/chain/did/dids/did:y')).body.iidDocument.id).to.equal('did:y');
      expect((await get('/chain/claims/collection/7')).body.collection.id).to.equal('7');
      expect((await get('/chain/claims/collections')).status).to.equal(200);
      expect((await get('/chain/claims/claim/c1')).body.claim.claim_id).to.equal('c1');
      expect((await get('/chain/claims/claims')).status).to.equal(200);
      expect((await get('/chain/token/params')).body.params.ixo1155_contract_code).to.equal('9');
    });

    it('serves the legacy claims paths (additional_bindings) with the same methods', async () => {
      node.calls.length = 0;
      expect((await get('/chain/claim/c2')).body.claim.claim_id).to.equal('c2');
      expect((await get('/chain/collection/8')).body.collection.id).to.equal('8');
      expect((await get('/chain/claim')).status).to.equal(200);
      expect((await get('/chain/collection')).status).to.equal(200);
      expect(node.calls).to.deep.equal(['Claim', 'Collection', 'ClaimList', 'CollectionList']);
    });

    it('answers 404 {"code":5,"message":"Not Found","details":[]} for unknown routes, as the specification says (CHAIN_UNKNOWN_ROUTE_STATUS=404)', async () => {
      for (const path of UNKNOWN_ROUTES) {
        const res = await get(path);
        expect(res.status, path).to.equal(404);
        expect(res.body, path).to.deep.equal(NOT_FOUND);
      }
    });

    it('answers a wrong method on a known route like an unknown route: 501 code 12, no Allow; HEAD included', async () => {
      for (const method of ['POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS']) {
        const res = await get('/chain/entity/did:x', { method });
        expect(res.status, method).to.equal(501);
        expect(res.headers.get('allow'), method).to.equal(null);
        if (method !== 'HEAD') expect(res.body, method).to.deep.equal(NOT_IMPLEMENTED);
      }
    });

    it('serves a POST of a form on a GET route as the GET, form before query (grpc-gateway v1 path length fallback)', async () => {
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const res = await get('/chain/claims/claims?pagination.limit=9&pagination.offset=3', { method: 'POST', headers: form, body: 'pagination.limit=2&pagination.reverse=true' });
      expect(res.status).to.equal(200);
      expect(JSON.parse(res.body.claims[0].claim_id)).to.deep.equal({ pagination: { limit: '2', offset: '3', reverse: true } });
      // X-HTTP-Method-Override: GET routes as GET, and a GET has no body: only the query counts.
      const overridden = await get('/chain/claims/claims?pagination.limit=9', { method: 'POST', headers: { ...form, 'x-http-method-override': 'get' }, body: 'pagination.limit=2' });
      expect(JSON.parse(overridden.body.claims[0].claim_id)).to.deep.equal({ pagination: { limit: '9' } });
      const deleted = await get('/chain/claims/claims', { method: 'POST', headers: { ...form, 'x-http-method-override': 'DELETE' }, body: '' });
      expect(deleted.status).to.equal(501);
      // The form must be exactly that type, and must parse as Go parses it.
      const charset = await get('/chain/claims/claims', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, body: 'pagination.limit=2' });
      expect(charset.status).to.equal(501);
      const bad = await get('/chain/claims/claims', { method: 'POST', headers: form, body: 'pagination.limit=2;x=1' });
      expect(bad.status).to.equal(400);
      expect(bad.body.message).to.equal('invalid semicolon separator in query');
    });

    it('never parses a JSON body: a POST with broken JSON is still a 501, a GET with one is answered', async () => {
      const post = await get('/chain/token/params', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' });
      expect(post.status).to.equal(501);
      expect(post.body).to.deep.equal(NOT_IMPLEMENTED);
      // fetch sends no GET body; supertest does.
      const withBody = await request(server.baseUrl).get('/chain/token/params').set('content-type', 'application/json').send('{bad');
      expect(withBody.status).to.equal(200);
    });

    it('answers 400 code 3 for a path segment that is not valid percent-encoding', async () => {
      const res = await get('/chain/entity/%E0%A4%A');
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal(3);
    });
  });

  describe('request targets as grpc-gateway v1 behind gorilla/mux', () => {
    /** The request target sent as written: fetch would resolve `.` and `..` segments itself. */
    const raw = (path: string) =>
      new Promise<{ status: number; location?: string; text: string }>((resolve, reject) => {
        const { hostname, port } = new URL(server.baseUrl);
        const req = httpRequest({ hostname, port, path, method: 'GET' }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, text }));
        });
        req.on('error', reject);
        req.end();
      });

    it('redirects a path with //, . or .. segments (301) to the cleaned path, query kept, without calling the node', async () => {
      node.calls.length = 0;
      for (const [path, location] of [
        ['/chain//token/params', '/chain/token/params'],
        ['/chain/token//params/', '/chain/token/params/'],
        ['/chain/./entity/params', '/chain/entity/params'],
        ['/chain/entity/x/../params?pagination.limit=1', '/chain/entity/params?pagination.limit=1'],
        ['/chain/entity/a%2F..%2Fparams', '/chain/entity/params'],
        ['/v1/../chain/token/params', '/chain/token/params'],
        ['/chain/entity/did:ixo:x%20y/./metadata', '/chain/entity/did:ixo:x%20y/metadata'],
        ['/chain//entity/did%3Aixo%3Ax?a=%3A', '/chain/entity/did:ixo:x?a=%3A'],
        // Encoded dot segments clean as literal ones do, from the root: out of the gateway too.
        ['/chain/..%2Fhealth', '/health'],
        ['/chain/../health', '/health'],
        ['/chain/foo%2F..%2F..%2F..%2Fv1/claims', '/v1/claims'],
        ['/chain/entity/a%2F..%2F..%2F..%2F%2Fevil.com', '/evil.com'],
      ]) {
        const res = await raw(path!);
        expect(res.status, path).to.equal(301);
        expect(res.location, path).to.equal(location);
        expect(res.text, path).to.equal('');
      }
      expect(node.calls).to.deep.equal([]);
    });

    it('decodes %2F before matching, so an encoded slash separates segments', async () => {
      expect((await get('/chain/entity%2Fparams')).body.params.nftContractAddress).to.equal('Params');
      expect((await get('/chain%2Ftoken%2Fparams')).body).to.deep.equal({ params: { ixo1155_contract_code: '9' } });
      const split = await get('/chain/entity/did%3Aixo%2Fabc');
      expect(split.status).to.equal(404);
      expect(split.body).to.deep.equal(NOT_FOUND);
    });

    it('answers a path that is not valid percent-encoding 400 code 3', async () => {
      const res = await raw('/chain/entity/%zz/metadata');
      expect(res.status).to.equal(400);
      expect(JSON.parse(res.text).code).to.equal(3);
    });

    it('binds enum path variables by name or number, Go integer syntax included', async () => {
      for (const role of ['DISPUTE_TARGET_ROLE_EVALUATOR', '2', '0x2', '0b10']) {
        expect((await get(`/chain/claims/dispute-by-subject/s1/${role}`)).body.dispute, role).to.include({ subject_id: 's1', target_role: 'DISPUTE_TARGET_ROLE_EVALUATOR' });
      }
      const bad = await get('/chain/claims/dispute-by-subject/s1/9');
      expect(bad.status).to.equal(400);
      expect(bad.body.message).to.contain('targetRole');
    });

    it('reaches the v8 query methods by their annotated paths', async () => {
      expect((await get('/chain/claims/intent/ixo1agent/7/i1')).body.intent).to.include({ id: 'i1', agent_address: 'ixo1agent', collection_id: '7' });
      expect((await get('/chain/token/minter/ixo1m/ixo1c')).body.tokenDoc).to.include({ minter: 'ixo1m', contract_address: 'ixo1c', cap: '0', supply: '0' });
      // The echo node does not implement DisputeList: the node's UNIMPLEMENTED is a 501.
      const unimplemented = await get('/chain/claims/disputes');
      expect(unimplemented.status).to.equal(501);
      expect(unimplemented.body.code).to.equal(12);
    });
  });

  describe('upstream errors', () => {
    it('passes gRPC error details through, each as an Any with @type and proto field names', async () => {
      const res = await get('/chain/claims/claim/with-details');
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal({
        code: 9,
        message: 'claim with-details is disputed',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CLAIM_DISPUTED', domain: 'claims.ixo.world', metadata: { claim: 'with-details' } },
          { '@type': 'type.googleapis.com/google.rpc.BadRequest', field_violations: [{ field: 'id', description: 'disputed' }] },
        ],
      });
    });

    it('passes a status code outside the table through as grpc-gateway v1 does: 500 with the code and message as sent', async () => {
      const res = await get('/chain/claims/claim/code-99');
      expect(res.status).to.equal(500);
      expect(res.body).to.deep.equal({ code: 99, message: 'beyond the table: 100%', details: [] });
    });

    it('answers a detail of an unknown type as grpc-gateway does: 500 with its fixed fallback body', async () => {
      const res = await fetch(`${server.baseUrl}/chain/claims/claim/odd-details`);
      expect(res.status).to.equal(500);
      expect(await res.text()).to.equal('{"code": 13, "message": "failed to marshal error message"}');
    });
  });

  describe('query parameters', () => {
    const claimListRequest = async (query: string) => {
      const res = await get(`/chain/claims/claims?${query}`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return JSON.parse(res.body.claims[0].claim_id);
    };

    it('maps pagination.* to the PageRequest', async () => {
      expect(await claimListRequest('pagination.limit=50&pagination.offset=10&pagination.count_total=true&pagination.reverse=true')).to.deep.equal({
        pagination: { limit: '50', offset: '10', countTotal: true, reverse: true },
      });
    });

    it('takes pagination.key as URL-encoded base64 (standard or URL-safe)', async () => {
      expect(await claimListRequest(`pagination.key=${encodeURIComponent('+/8B')}`)).to.deep.equal({ pagination: { key: '+/8B' } });
      expect(await claimListRequest('pagination.key=-_8B')).to.deep.equal({ pagination: { key: '+/8B' } });
      expect(await claimListRequest('pagination.key=AQ%3D%3D')).to.deep.equal({ pagination: { key: 'AQ==' } });
    });

    it('reads pagination.key as grpc-gateway v1 does: padded base64 only, an unescaped "+" (a space) refused', async () => {
      for (const key of ['+/8B', 'AQ', '-_8']) {
        const res = await get(`/chain/claims/claims?pagination.key=${key}`);
        expect(res.status, key).to.equal(400);
        expect(res.body.message, key).to.equal('illegal base64 data at input byte 0');
      }
    });

    it('accepts the lowerCamel aliases', async () => {
      expect(await claimListRequest('pagination.countTotal=true&pagination.limit=5')).to.deep.equal({ pagination: { limit: '5', countTotal: true } });
    });

    it('ignores unknown parameters', async () => {
      expect(await claimListRequest('foo=bar&pagination.nope=1&pagination.limit=2')).to.deep.equal({ pagination: { limit: '2' } });
    });

    it('answers 400 code 3 with the Go error text for a bad value', async () => {
      for (const [query, message] of [
        ['pagination.limit=abc', 'strconv.ParseUint: parsing "abc": invalid syntax'],
        ['pagination.limit=-1', 'strconv.ParseUint: parsing "-1": invalid syntax'],
        ['pagination.offset=18446744073709551616', 'strconv.ParseUint: parsing "18446744073709551616": value out of range'],
        ['pagination.count_total=maybe', 'strconv.ParseBool: parsing "maybe": invalid syntax'],
        ['pagination.key=a', 'illegal base64 data at input byte 0'],
        ['pagination.limit=0x', 'strconv.ParseUint: parsing "0x": invalid syntax'],
        ['pagination.limit=08', 'strconv.ParseUint: parsing "08": invalid syntax'],
        ['pagination.limit=+5', 'strconv.ParseUint: parsing " 5": invalid syntax'], // an unescaped + is a space
      ]) {
        const res = await get(`/chain/claims/claims?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body, query).to.deep.equal({ code: 3, message, details: [] });
      }
    });

    it('takes the first value of a repeated parameter (grpc-gateway v1)', async () => {
      expect(await claimListRequest('pagination.limit=1&pagination.limit=2&pagination.reverse=true&pagination.reverse=false')).to.deep.equal({
        pagination: { limit: '1', reverse: true },
      });
    });

    it('parses integers as Go strconv with base 0: hex, octal, binary, underscores', async () => {
      expect(await claimListRequest('pagination.limit=0x10&pagination.offset=010')).to.deep.equal({ pagination: { limit: '16', offset: '8' } });
      expect(await claimListRequest('pagination.limit=0b101&pagination.offset=1_000')).to.deep.equal({ pagination: { limit: '5', offset: '1000' } });
      expect(await claimListRequest('pagination.limit=0o17')).to.deep.equal({ pagination: { limit: '15' } });
    });

    it('answers 400 code 3 for a query Go refuses: a bad escape or a ; separator', async () => {
      for (const [query, message] of [
        ['pagination.key=%%%', 'invalid URL escape "%%%"'],
        ['pagination.limit=1%zz', 'invalid URL escape "%zz"'],
        ['pagination.limit=1;pagination.offset=2', 'invalid semicolon separator in query'],
      ]) {
        const res = await get(`/chain/claims/claims?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body, query).to.deep.equal({ code: 3, message, details: [] });
      }
    });

    it('lets the path, not the query, set a path variable', async () => {
      expect((await get('/chain/entity/did:a?id=did:b')).body.entity.id).to.equal('did:a');
    });
  });
});

forEachDatabase('chain gateway configuration', (t) => {
  let node: Awaited<ReturnType<typeof echoNode>>;
  before(async () => {
    node = await echoNode();
  });
  after(async () => {
    await node?.close();
  });

  async function withServer(env: Record<string, string>, fn: (get: (path: string, init?: RequestInit) => Promise<{ status: number; headers: Headers; body: any; text: string }>) => Promise<void>) {
    const server = await startTestServer(t.db, { CHAIN_GRPC_URL: node.url, ...env });
    try {
      await fn(async (path, init) => {
        const res = await fetch(server.baseUrl + path, init);
        const text = await res.text();
        return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
      });
    } finally {
      await server.stop();
    }
  }

  it('CHAIN_PREFIX replaces /chain', async () => {
    await withServer({ CHAIN_PREFIX: '/ixo' }, async (get) => {
      expect((await get('/ixo/token/params')).status).to.equal(200);
      expect((await get('/ixo/nope')).body).to.deep.equal(NOT_FOUND);
      const old = await get('/chain/token/params');
      expect(old.status).to.equal(404);
      expect(old.headers.get('content-type')).to.contain('application/problem+json');
    });
  });

  it('CHAIN_PREFIX_ALIASES adds prefixes next to /chain', async () => {
    await withServer({ CHAIN_PREFIX_ALIASES: '/ixo,/legacy' }, async (get) => {
      for (const p of ['/chain', '/ixo', '/legacy']) {
        expect((await get(`${p}/entity/params`)).body.params.nftContractAddress, p).to.equal('Params');
        expect((await get(`${p}/nope`)).body.code, p).to.equal(5);
      }
    });
  });

  it('CHAIN_BASE_PATH goes in front of every prefix', async () => {
    await withServer({ CHAIN_BASE_PATH: '/rest', CHAIN_PREFIX_ALIASES: '/ixo' }, async (get) => {
      expect((await get('/rest/chain/token/params')).status).to.equal(200);
      expect((await get('/rest/ixo/token/params')).status).to.equal(200);
      expect((await get('/chain/token/params')).status).to.equal(404);
    });
  });

  it('CHAIN_DISABLED_METHODS answers 501 code 12 without calling the upstream (a path no route has stays 404)', async () => {
    await withServer({ CHAIN_DISABLED_METHODS: 'ixo.claims.v1beta1.Query.ClaimList' }, async (get) => {
      node.calls.length = 0;
      const res = await get('/chain/claims/claims');
      expect(res.status).to.equal(501);
      expect(res.body).to.deep.equal({ code: 12, message: 'method ixo.claims.v1beta1.Query.ClaimList is disabled on this gateway', details: [] });
      expect((await get('/chain/claim')).status).to.equal(501);
      expect(node.calls).to.deep.equal([]);
      expect((await get('/chain/claims/claim/x')).status).to.equal(200);
      expect((await get('/chain/claims/nope')).body).to.deep.equal(NOT_FOUND);
    });
  });

  it('rejects malformed area C variables, naming the variable', () => {
    for (const [name, value] of <[string, string][]>[
      ['CHAIN_PREFIX_ALIASES', 'ixo'],
      ['CHAIN_PREFIX', 'chain'],
      ['CHAIN_CLAIMS_NETWORK_FEE_PERCENTAGE', '10%'],
      ['CHAIN_CLAIMS_NODE_FEE_PERCENTAGE', '0.1234567890123456789'],
      ['CHAIN_TOKEN_IXO1155_CONTRACT_CODE', '-1'],
    ]) {
      expect(() => configWith({ [name]: value }), name).to.throw(ConfigError, name);
    }
  });

  it('refuses to start with an unknown method in CHAIN_DISABLED_METHODS', async () => {
    let error: Error | undefined;
    try {
      await startTestServer(t.db, { CHAIN_DISABLED_METHODS: 'ixo.claims.v1beta1.Query.Nope' });
    } catch (err) {
      error = err as Error;
    }
    expect(error).to.be.instanceOf(ConfigError);
    expect(error?.message).to.match(/^Invalid configuration:\n {2}CHAIN_DISABLED_METHODS: names unknown methods: ixo\.claims\.v1beta1\.Query\.Nope /);
  });

  it('CHAIN_GATEWAY_STYLE=v2 keeps the v2-style edge: 404, 405 with Allow, trailing slash, HEAD as GET, decimal only', async () => {
    await withServer({ CHAIN_GATEWAY_STYLE: 'v2' }, async (get) => {
      const unknown = await get('/chain/nope');
      expect(unknown.status).to.equal(404);
      expect(unknown.body).to.deep.equal({ code: 5, message: 'Not Found', details: [] });
      const post = await get('/chain/entity/did:x', { method: 'POST' });
      expect(post.status).to.equal(405);
      expect(post.headers.get('allow')).to.equal('GET');
      expect(post.body.code).to.equal(12);
      expect((await get('/chain/token/params/')).body).to.deep.equal({ params: { ixo1155_contract_code: '9' } });
      expect((await get('/chain/token/params', { method: 'HEAD' })).status).to.equal(200);
      // protojson escapes DEL, not HTML characters.
      expect((await get('/chain/entity/a%26%7F')).text).to.contain('"id":"a&\\u007f"');
      // No redirect once decoded: %2F stays inside the segment.
      expect((await get('/chain/entity/a%2F..%2Fparams', { redirect: 'manual' })).body.entity.id).to.equal('a/../params');
      expect((await get('/chain%2Ftoken%2Fparams')).status).to.equal(404);
      // v2 reads an unescaped "+" (a space) and unpadded base64 as base64.
      const lenient = await get('/chain/claims/claims?pagination.key=+/8B&pagination.offset=0');
      expect(lenient.status).to.equal(200);
      expect(JSON.parse(lenient.body.claims[0].claim_id)).to.deep.equal({ pagination: { key: '+/8B' } });
      for (const query of ['pagination.limit=1&pagination.limit=2', 'pagination.limit=0x10']) {
        const res = await get(`/chain/claims/claims?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body.message, query).to.contain('pagination.limit');
      }
    });
  });

  it('refuses an unknown CHAIN_GATEWAY_STYLE, naming the variable', () => {
    expect(() => configWith({ CHAIN_GATEWAY_STYLE: 'v3' })).to.throw(ConfigError, 'CHAIN_GATEWAY_STYLE');
  });

  it("CHAIN_UNKNOWN_ROUTE_STATUS=501 answers a path no route has as grpc-gateway v1 on a Cosmos node does, byte for byte; the rest of the v1 edge is the default's", async () => {
    await withServer({ CHAIN_UNKNOWN_ROUTE_STATUS: '501' }, async (get) => {
      for (const path of UNKNOWN_ROUTES) {
        const res = await get(path);
        expect(res.status, path).to.equal(501);
        expect(res.headers.get('content-type'), path).to.equal('application/json');
        expect(res.text, path).to.equal(JSON.stringify(NOT_IMPLEMENTED));
      }
      const post = await get('/chain/entity/did:x', { method: 'POST' });
      expect([post.status, post.headers.get('allow')]).to.deep.equal([501, null]);
      expect((await get('/chain//token/params', { redirect: 'manual' })).status).to.equal(301);
      expect((await get('/chain/entity/params:')).body.params.nftContractAddress).to.equal('Params');
    });
    // The v2 style keeps its 405 for a wrong method: only a path no route has is answered 501.
    await withServer({ CHAIN_GATEWAY_STYLE: 'v2', CHAIN_UNKNOWN_ROUTE_STATUS: '501' }, async (get) => {
      expect((await get('/chain/nope')).body).to.deep.equal(NOT_IMPLEMENTED);
      expect((await get('/chain/entity/did:x', { method: 'POST' })).status).to.equal(405);
    });
  });

  it('refuses a CHAIN_UNKNOWN_ROUTE_STATUS other than 404 or 501, naming the variable', () => {
    expect(() => configWith({ CHAIN_UNKNOWN_ROUTE_STATUS: '500' })).to.throw(ConfigError, 'CHAIN_UNKNOWN_ROUTE_STATUS');
  });

  describe('API-key gating (CHAIN_GATEWAY_AUTH=apikey)', () => {
    it('answers 401 code 16 without a key or with an unknown key', async () => {
      await withServer({ CHAIN_GATEWAY_AUTH: 'apikey' }, async (get) => {
        const res = await get('/chain/token/params');
        expect(res.status).to.equal(401);
        expect(res.body.code).to.equal(16);
        expect(res.body.details).to.deep.equal([]);
        expect(res.headers.get('www-authenticate')).to.contain('Bearer');
        expect((await get('/chain/token/params', { headers: { authorization: 'Bearer hth_nope' } })).status).to.equal(401);
      });
    });

    it('answers 403 code 7 for a key without chain:read and 200 with it', async () => {
      const without = await createTestKey(t.db, { scopes: ['twins:read'] });
      const withScope = await createTestKey(t.db, { scopes: ['chain:read'] });
      await withServer({ CHAIN_GATEWAY_AUTH: 'apikey' }, async (get) => {
        const denied = await get('/chain/token/params', { headers: { authorization: `Bearer ${without}` } });
        expect(denied.status).to.equal(403);
        expect(denied.body.code).to.equal(7);
        expect((await get('/chain/token/params', { headers: { authorization: `Bearer ${withScope}` } })).status).to.equal(200);
      });
    });

    it('is open by default', async () => {
      await withServer({}, async (get) => {
        expect((await get('/chain/token/params')).status).to.equal(200);
      });
    });
  });

  describe('CORS', () => {
    it('is off by default: no Access-Control-Allow-Origin for any origin', async () => {
      await withServer({}, async (get) => {
        const res = await get('/chain/token/params', { headers: { origin: 'https://app.example' } });
        expect(res.status).to.equal(200);
        expect(res.headers.get('access-control-allow-origin')).to.equal(null);
      });
    });

    it('allows only the origins of CHAIN_CORS_ORIGINS, preflight included', async () => {
      await withServer({ CHAIN_CORS_ORIGINS: 'https://app.example', CHAIN_GATEWAY_AUTH: 'apikey' }, async (get) => {
        const pre = await get('/chain/token/params', { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } });
        expect(pre.status).to.equal(204);
        expect(pre.headers.get('access-control-allow-origin')).to.equal('https://app.example');
        expect(pre.headers.get('access-control-allow-headers')).to.contain('Authorization');
        // v1 (the default) offers only GET: HEAD and OPTIONS are 501 there, as on a node.
        expect(pre.headers.get('access-control-allow-methods')).to.equal('GET');
        // Errors carry the header too, so the browser can read them.
        const unauth = await get('/chain/token/params', { headers: { origin: 'https://app.example' } });
        expect(unauth.status).to.equal(401);
        expect(unauth.headers.get('access-control-allow-origin')).to.equal('https://app.example');
        const other = await get('/chain/token/params', { headers: { origin: 'https://evil.example' } });
        expect(other.headers.get('access-control-allow-origin')).to.equal(null);
        // Refused origins vary too, or a shared cache could hand their answer to an allowed one.
        expect(other.headers.get('vary')).to.match(/\bOrigin\b/);
        expect(unauth.headers.get('vary')).to.match(/\bOrigin\b/);
      });
    });
  });
});

forEachDatabase('chain query node over gRPC', (t) => {
  it('serves the query services on GRPC_PORT to any gRPC client', async () => {
    const server = await startTestServer(t.db, { CHAIN_TOKEN_IXO1155_CONTRACT_CODE: '25' });
    try {
      const port = server.hearth.app.locals.chainGrpcPort as number;
      const client = createClient(TokenQuery, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
      const res = await client.params({});
      expect(res.params?.ixo1155ContractCode).to.equal(25n);
    } finally {
      await server.stop();
    }
  });

  it('answers UNIMPLEMENTED for a disabled method', async () => {
    const server = await startTestServer(t.db, { CHAIN_DISABLED_METHODS: 'ixo.token.v1beta1.Query.Params' });
    try {
      const port = server.hearth.app.locals.chainGrpcPort as number;
      const client = createClient(TokenQuery, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
      let code: Code | undefined;
      try {
        await client.params({});
      } catch (err) {
        code = ConnectError.from(err).code;
      }
      expect(code).to.equal(Code.Unimplemented);
    } finally {
      await server.stop();
    }
  });

  it('answers 501 code 12 for the v8 queries of data Hearth does not hold (disputes, intents, members, deposits, tokens)', async () => {
    const server = await startTestServer(t.db, {});
    try {
      for (const path of [
        '/chain/claims/disputes',
        '/chain/claims/dispute/p1',
        '/chain/claims/intents',
        '/chain/claims/collection/1/members',
        '/chain/claims/collection/1/member/ixo1m',
        '/chain/claims/collection/1/deposits',
        '/chain/token/metadata/t1',
        '/chain/token/minter/ixo1m',
      ]) {
        const res = await fetch(server.baseUrl + path);
        expect(res.status, path).to.equal(501);
        const body = await res.json();
        expect(body.code, path).to.equal(12);
        expect(body.message, path).to.match(/^this node holds no /);
      }
    } finally {
      await server.stop();
    }
  });

  it('does not listen when GRPC_ENABLED=false; the gateway still answers from the embedded services', async () => {
    const server = await startTestServer(t.db, { GRPC_ENABLED: 'false' });
    try {
      expect(server.hearth.app.locals.chainGrpcPort).to.equal(undefined);
      const res = await fetch(`${server.baseUrl}/chain/token/params`);
      expect(await res.json()).to.deep.equal({ params: { ixo1155_contract_code: '0' } });
    } finally {
      await server.stop();
    }
  });
});
