// Every gateway route against the embedded query node, with entities, collections and KPT
// claims created through area A's API; key and offset pagination as Cosmos does it.
import { expect } from 'chai';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { changeCredentialStatus, createCollection, createDraw, createEntity, submitClaim } from '../../generated/openapi/sdk.gen.ts';
import { EvaluationStatus } from '../../generated/proto/ixo/claims/v1beta1/claims_pb.ts';
import { ClaimsQuery, EntityQuery } from '../../src/chain/services.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer, type TestServer } from '../helpers/server.ts';

const CONTROLLER = 'did:ixo:entity:0000000000000000000000000000c0de';

const CENSUS = { type: 'full-population', frame: 'The households of the test register', procedure: 'Every household of the register' } as const;

forEachDatabase('chain routes over the embedded node', (t) => {
  let server: TestServer;
  let auth: { authorization: string };
  const dids: string[] = [];
  let protocolDid: string;
  let deviceDid: string;
  let device: any;
  const claims: Record<string, any> = {};

  const get = async (path: string) => {
    const res = await fetch(server.baseUrl + path);
    return { status: res.status, body: (await res.json()) };
  };

  const claimBody = (householdId: string, testGroup: 'reference' | 'intervention', opts: { season?: string; collectionId?: string } = {}) => ({
    type: 'KPTClaim' as const,
    collectionId: opts.collectionId ?? 'kpt-malawi',
    householdId,
    testGroup,
    fuelMeasurements: { total: 7.5, dailyLogs: [2.5, 2.5, 2.5] },
    testPeriod: { startDate: '2024-06-01', endDate: '2024-06-03', durationDays: 3 },
    externalFactors: { ...(opts.season === undefined ? { season: 'dry' } : {}), culturalEvents: ['none'], occupationalFactors: ['farming'] },
  });

  /** Lists households (by the last hex digits of their DIDs) in the census of a full-population collection: rule 5 holds for them. */
  const census = async (client: TestServer['client'], id: string, households: string[]) => {
    const res = await createDraw({ client, headers: auth, path: { id }, body: { frame: households.map((h) => ({ household: `did:ixo:entity:${h.padStart(32, '0')}` })) } });
    expect(res.response.status, JSON.stringify(res.error)).to.equal(201);
  };

  before(async () => {
    server = await startTestServer(t.db, { CHAIN_CLAIMS_NETWORK_FEE_PERCENTAGE: '0.1', CHAIN_CLAIMS_IXO_ACCOUNT: 'ixo1network', CHAIN_TOKEN_IXO1155_CONTRACT_CODE: '25' });
    auth = { authorization: `Bearer ${await createTestKey(t.db, { principalDid: CONTROLLER })}` };
    const client = server.client;

    const protocol = await createEntity({ client, headers: auth, body: { type: 'Protocol', properties: { model: 'string' }, relationships: { verifier: 'OracleEntity' } } as any });
    expect(protocol.response.status, JSON.stringify(protocol.error)).to.equal(201);
    protocolDid = (protocol.data as any).did;
    dids.push(protocolDid);

    const created = await createEntity({
      client,
      headers: auth,
      body: {
        type: 'CleanCookingDevice',
        protocol: protocolDid,
        properties: { model: 'Mimi Moto' },
        services: [{ id: '#data', type: 'DataService', endpoint: 'https://data.example/stoves/1' }],
        verifiableCredential: [{ type: 'StoveCertificate', issuer: 'did:ixo:entity:0000000000000000000000000000a11c' }],
      } as any,
    });
    expect(created.response.status, JSON.stringify(created.error)).to.equal(201);
    device = created.data;
    deviceDid = device.did;
    dids.push(deviceDid);
    for (let i = 0; i < 3; i++) {
      const e = await createEntity({ client, headers: auth, body: { type: 'Device', properties: {}, relationships: {} } as any });
      expect(e.response.status, JSON.stringify(e.error)).to.equal(201);
      dids.push((e.data as any).did);
    }

    const col = await createCollection({ client, headers: auth, body: { id: 'kpt-malawi', name: 'KPT Malawi', selectionDesign: CENSUS } });
    expect(col.response.status, JSON.stringify(col.error)).to.equal(201);
    await census(client, 'kpt-malawi', ['a01', 'a02', 'a03']);

    // A reference claim waits for its control group; the aligned intervention claim below
    // completes the pair and both end verified.
    const paired = await submitClaim({ client, headers: auth, body: claimBody('did:ixo:entity:00000000000000000000000000000a01', 'reference') as any });
    expect(paired.response.status, JSON.stringify(paired.error)).to.be.oneOf([200, 201, 202]);
    claims.paired = paired.data;
    // Without a season the claim fails a rule: rejected.
    const rejected = await submitClaim({ client, headers: auth, body: claimBody('did:ixo:entity:00000000000000000000000000000a02', 'intervention', { season: '' }) as any });
    expect(rejected.response.status, JSON.stringify(rejected.error)).to.be.oneOf([200, 201, 202]);
    claims.rejected = rejected.data;
    // An aligned intervention claim completes the pair: verified.
    const verified = await submitClaim({ client, headers: auth, body: claimBody('did:ixo:entity:00000000000000000000000000000a03', 'intervention') as any });
    expect(verified.response.status, JSON.stringify(verified.error)).to.be.oneOf([200, 201, 202]);
    claims.verified = verified.data;
    // Alone in its collection, a reference claim stays pending.
    const other = await createCollection({ client, headers: auth, body: { id: 'kpt-zambia', name: 'KPT Zambia', selectionDesign: CENSUS } });
    expect(other.response.status, JSON.stringify(other.error)).to.equal(201);
    await census(client, 'kpt-zambia', ['a04']);
    const pending = await submitClaim({ client, headers: auth, body: claimBody('did:ixo:entity:00000000000000000000000000000a04', 'reference', { collectionId: 'kpt-zambia' }) as any });
    expect(pending.response.status, JSON.stringify(pending.error)).to.be.oneOf([200, 201, 202]);
    claims.pending = pending.data;
  });

  after(async () => {
    await server?.stop();
  });

  describe('entity', () => {
    it('GET /chain/entity/{id} answers the entity and its IID document', async () => {
      const res = await get(`/chain/entity/${deviceDid}`);
      expect(res.status).to.equal(200);
      const created = device.createdAt.replace(/\.000Z$/, 'Z');
      const updated = device.updatedAt.replace(/\.000Z$/, 'Z');
      expect(res.body).to.deep.equal({
        entity: {
          id: deviceDid,
          type: 'CleanCookingDevice',
          start_date: created,
          end_date: null,
          status: 0,
          relayer_node: '',
          credentials: ['StoveCertificate:did:ixo:entity:0000000000000000000000000000a11c'],
          entity_verified: true,
          metadata: { version_id: `${deviceDid}#${device.updatedAt}`, created, updated },
          accounts: [],
        },
        iidDocument: {
          context: [{ key: '@context', val: 'https://www.w3.org/ns/did/v1' }],
          id: deviceDid,
          controller: [CONTROLLER],
          verificationMethod: [],
          service: [{ id: '#data', type: 'DataService', serviceEndpoint: 'https://data.example/stoves/1' }],
          authentication: [],
          assertionMethod: [],
          keyAgreement: [],
          capabilityInvocation: [],
          capabilityDelegation: [],
          linkedResource: [],
          linkedClaim: [],
          accordedRight: [],
          linkedEntity: [{ type: 'Protocol', id: protocolDid, relationship: 'protocol', service: '' }],
          alsoKnownAs: '',
          metadata: { versionId: `${deviceDid}#${device.updatedAt}`, created, updated, deactivated: false },
        },
      });
    });

    it("a Protocol's relationships name entity types, not linked entities", async () => {
      expect((await get(`/chain/entity/${protocolDid}/iiddocument`)).body.iidDocument.linkedEntity).to.deep.equal([]);
    });

    it('GET /chain/entity/{id}/metadata, /iiddocument and /verified', async () => {
      const full = (await get(`/chain/entity/${deviceDid}`)).body;
      expect((await get(`/chain/entity/${deviceDid}/metadata`)).body).to.deep.equal({ entity: full.entity });
      expect((await get(`/chain/entity/${deviceDid}/iiddocument`)).body).to.deep.equal({ iidDocument: full.iidDocument });
      expect((await get(`/chain/entity/${deviceDid}/verified`)).body).to.deep.equal({ entity_verified: true });
      expect((await get(`/chain/entity/${dids[2]}/verified`)).body).to.deep.equal({ entity_verified: false });
    });

    it('GET /chain/entity/params counts the entities in createSequence', async () => {
      expect((await get('/chain/entity/params')).body).to.deep.equal({ params: { nftContractAddress: '', nftContractMinter: '', createSequence: '5' } });
    });

    it('GET /chain/entity lists every entity in creation order with a total', async () => {
      const res = await get('/chain/entity');
      expect(res.body.entities.map((e: any) => e.id)).to.deep.equal(dids);
      expect(res.body.pagination).to.deep.equal({ next_key: null, total: '5' });
    });

    it('answers 404 code 5 for an unknown entity on every entity route', async () => {
      for (const suffix of ['', '/metadata', '/iiddocument', '/verified']) {
        const res = await get(`/chain/entity/did:ixo:entity:ffffffffffffffffffffffffffffffff${suffix}`);
        expect(res.status, suffix).to.equal(404);
        expect(res.body, suffix).to.deep.equal({ code: 5, message: 'entity did:ixo:entity:ffffffffffffffffffffffffffffffff not found', details: [] });
      }
    });
  });

  describe('iid', () => {
    it('GET /chain/did/dids/{id} answers the DID document', async () => {
      const full = (await get(`/chain/entity/${deviceDid}`)).body;
      expect((await get(`/chain/did/dids/${deviceDid}`)).body).to.deep.equal({ iidDocument: full.iidDocument });
      expect((await get('/chain/did/dids/did:ixo:entity:nope')).status).to.equal(404);
    });

    it('GET /chain/did/dids lists the DID documents', async () => {
      const res = await get('/chain/did/dids?pagination.limit=2');
      expect(res.body.iidDocuments.map((d: any) => d.id)).to.deep.equal(dids.slice(0, 2));
      expect(res.body.pagination.next_key).to.be.a('string');
    });
  });

  describe('claims', () => {
    it('GET /chain/claims/claim/{id} maps the claim status to the evaluation status', async () => {
      const pending = (await get(`/chain/claims/claim/${claims.pending.id}`)).body.claim;
      expect(pending).to.deep.include({ collection_id: 'kpt-zambia', agent_did: 'did:ixo:entity:00000000000000000000000000000a04', claim_id: claims.pending.id, agent_address: '', use_intent: false, amount: [], payments_status: { submission: 'NO_PAYMENT', evaluation: 'NO_PAYMENT', approval: 'NO_PAYMENT', rejection: 'NO_PAYMENT' } });
      expect(pending.submission_date).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
      expect(pending.evaluation).to.include({ status: 'PENDING', evaluation_date: null, oracle: '' });

      const rejected = (await get(`/chain/claims/claim/${claims.rejected.id}`)).body.claim;
      expect(rejected.evaluation.status).to.equal('REJECTED');
      expect(rejected.evaluation.evaluation_date).to.be.a('string');

      const verified = (await get(`/chain/claims/claim/${claims.verified.id}`)).body.claim;
      expect(verified.evaluation.status).to.equal('APPROVED');
      expect((await get(`/chain/claims/claim/${claims.paired.id}`)).body.claim.evaluation.status).to.equal('APPROVED');
      expect(verified.evaluation.oracle).to.equal(claims.verified.credential.issuer);
      expect(verified.evaluation.evaluation_date).to.be.a('string');
    });

    it('the legacy path /chain/claim/{id} answers the same claim', async () => {
      expect((await get(`/chain/claim/${claims.verified.id}`)).body).to.deep.equal((await get(`/chain/claims/claim/${claims.verified.id}`)).body);
    });

    it('GET /chain/claims/claims lists the claims; pagination.limit=50 as in the bench', async () => {
      const res = await get('/chain/claims/claims?pagination.limit=50');
      expect(res.status).to.equal(200);
      expect(res.body.claims.map((c: any) => c.claim_id)).to.deep.equal([claims.paired.id, claims.rejected.id, claims.verified.id, claims.pending.id]);
      expect(res.body.pagination).to.deep.equal({ next_key: null, total: '0' });
      // The list reads a narrower projection of the rows; it must show the same claims.
      for (const c of res.body.claims) expect(c).to.deep.equal((await get(`/chain/claims/claim/${c.claim_id}`)).body.claim);
      expect(res.body.claims[2].evaluation.verification_proof).to.be.a('string').and.not.equal('');
      expect(res.body.claims[2].evaluation.verification_proof).to.equal(claims.verified.verifiableCredential.id);
    });

    it('GET /chain/claims/collection/{id} carries the claim counts', async () => {
      const res = await get('/chain/claims/collection/kpt-malawi');
      expect(res.body.collection).to.deep.include({ id: 'kpt-malawi', count: '3', evaluated: '3', approved: '2', rejected: '1', disputed: '0', state: 'OPEN', payments: null });
      expect((await get('/chain/claims/collection/kpt-zambia')).body.collection).to.deep.include({ count: '1', evaluated: '0', approved: '0', rejected: '0' });
      expect(res.body.collection.admin).to.equal(CONTROLLER);
      expect((await get('/chain/claims/collection/nope')).body).to.deep.equal({ code: 5, message: 'collection nope not found', details: [] });
    });

    it('GET /chain/claims/collections lists the collections', async () => {
      const res = await get('/chain/claims/collections');
      expect(res.body.collections.map((c: any) => c.id)).to.include('kpt-malawi');
      expect(res.body.pagination.total).to.equal(String(res.body.collections.length));
    });

    it('GET /chain/claims/params from config, with LegacyDec fees', async () => {
      const collections = (await get('/chain/claims/collections')).body.collections.length;
      expect((await get('/chain/claims/params')).body).to.deep.equal({
        params: {
          collection_sequence: String(collections + 1),
          ixo_account: 'ixo1network',
          network_fee_percentage: '0.100000000000000000',
          node_fee_percentage: '0.000000000000000000',
          intent_sequence: '1',
        },
      });
    });

    it('answers 404 code 5 for an unknown claim', async () => {
      expect((await get('/chain/claims/claim/nope')).body).to.deep.equal({ code: 5, message: 'claim nope not found', details: [] });
    });
  });

  describe('token', () => {
    it('GET /chain/token/params', async () => {
      expect((await get('/chain/token/params')).body).to.deep.equal({ params: { ixo1155_contract_code: '25' } });
    });
  });

  describe('pagination', () => {
    const ids = (body: any) => body.entities.map((e: any) => e.id);

    it('pages by key: next_key resumes where the page ended, null on the last page', async () => {
      const first = (await get('/chain/entity?pagination.limit=2')).body;
      expect(ids(first)).to.deep.equal(dids.slice(0, 2));
      expect(first.pagination.total).to.equal('0');
      const second = (await get(`/chain/entity?pagination.limit=2&pagination.key=${encodeURIComponent(first.pagination.next_key)}`)).body;
      expect(ids(second)).to.deep.equal(dids.slice(2, 4));
      const third = (await get(`/chain/entity?pagination.limit=2&pagination.key=${encodeURIComponent(second.pagination.next_key)}`)).body;
      expect(ids(third)).to.deep.equal(dids.slice(4));
      expect(third.pagination.next_key).to.equal(null);
    });

    it('pages by offset, with total only when count_total is set', async () => {
      const res = (await get('/chain/entity?pagination.offset=1&pagination.limit=2&pagination.count_total=true')).body;
      expect(ids(res)).to.deep.equal(dids.slice(1, 3));
      expect(res.pagination.total).to.equal('5');
      expect(res.pagination.next_key).to.be.a('string');
      const past = (await get('/chain/entity?pagination.offset=10&pagination.limit=2')).body;
      expect(past).to.deep.equal({ entities: [], pagination: { next_key: null, total: '0' } });
    });

    it('without a limit pages 100 and counts the total', async () => {
      const res = (await get('/chain/entity?pagination.offset=3')).body;
      expect(ids(res)).to.deep.equal(dids.slice(3));
      expect(res.pagination).to.deep.equal({ next_key: null, total: '5' });
    });

    it('pages in reverse, by key too', async () => {
      const first = (await get('/chain/entity?pagination.limit=3&pagination.reverse=true')).body;
      expect(ids(first)).to.deep.equal([...dids].reverse().slice(0, 3));
      const second = (await get(`/chain/entity?pagination.limit=3&pagination.reverse=true&pagination.key=${encodeURIComponent(first.pagination.next_key)}`)).body;
      expect(ids(second)).to.deep.equal([...dids].reverse().slice(3));
      expect(second.pagination.next_key).to.equal(null);
    });

    it('answers 400 code 3 for both key and offset, and for a key the node did not issue', async () => {
      const key = (await get('/chain/entity?pagination.limit=1')).body.pagination.next_key;
      const both = await get(`/chain/entity?pagination.offset=1&pagination.key=${encodeURIComponent(key)}`);
      expect(both.status).to.equal(400);
      expect(both.body).to.deep.equal({ code: 3, message: 'invalid request, either offset or key is expected, got both', details: [] });
      const foreign = await get(`/chain/entity?pagination.key=${Buffer.from('did:nope').toString('base64')}`);
      expect(foreign.status).to.equal(400);
      expect(foreign.body.code).to.equal(3);
      const notUtf8 = await get(`/chain/entity?pagination.key=${encodeURIComponent(Buffer.from([0xff, 0xfe]).toString('base64'))}`);
      expect(notUtf8.status).to.equal(400);
      // Digits, but beyond any sequence number (PostgreSQL's integer column would fail the query).
      const tooLarge = await get(`/chain/entity?pagination.key=${Buffer.from('99999999999').toString('base64')}`);
      expect(tooLarge.status).to.equal(400);
      expect(tooLarge.body.code).to.equal(3);
      // Another spelling of a key the node gives ("01" for 1) is not one it issued.
      const spelt = await get(`/chain/claims/claims?pagination.key=${Buffer.from('01').toString('base64')}`);
      expect([spelt.status, spelt.body.code]).to.deep.equal([400, 3]);
      // A claims key naming a position no claim has: on PostgreSQL its page had come out empty, as if the list ended.
      for (const seq of ['0', '99999']) {
        const unknown = await get(`/chain/claims/claims?pagination.key=${Buffer.from(seq).toString('base64')}`);
        expect(unknown.status, seq).to.equal(400);
        expect(unknown.body).to.deep.equal({ code: 3, message: 'pagination key is not a key this node issued', details: [] });
      }
    });

    it('pages claims and collections the same way', async () => {
      const first = (await get('/chain/claims/claims?pagination.limit=2')).body;
      expect(first.claims).to.have.length(2);
      const rest = (await get(`/chain/claims/claims?pagination.limit=2&pagination.key=${encodeURIComponent(first.pagination.next_key)}`)).body;
      expect(rest.claims).to.have.length(2);
      expect(rest.pagination.next_key).to.equal(null);
      expect([...first.claims, ...rest.claims].map((c: any) => c.claim_id)).to.deep.equal([claims.paired.id, claims.rejected.id, claims.verified.id, claims.pending.id]);
      const cols = (await get('/chain/claims/collections?pagination.limit=1&pagination.reverse=true')).body;
      expect(cols.collections.map((c: any) => c.id)).to.deep.equal(['kpt-zambia']);
    });
  });

  describe('gRPC', () => {
    it("over gRPC a collection carries its nullable=false messages even when empty (min_deposit_period), as a node's gogo-marshalled answer does", async () => {
      const client = createClient(ClaimsQuery, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.hearth.app.locals.chainGrpcPort}` }));
      const res = await client.collection({ id: 'kpt-malawi' });
      expect(res.collection?.minDepositPeriod, 'present on the wire').to.not.equal(undefined);
      expect([res.collection!.minDepositPeriod!.seconds, res.collection!.minDepositPeriod!.nanos]).to.deep.equal([0n, 0]);
      // The gateway's JSON of the same: "0s".
      expect((await get('/chain/claims/collection/kpt-malawi')).body.collection.min_deposit_period).to.equal('0s');
    });

    it('a gRPC client gets the same entity from GRPC_PORT', async () => {
      const client = createClient(EntityQuery, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.hearth.app.locals.chainGrpcPort}` }));
      const res = await client.entity({ id: deviceDid });
      expect(res.entity?.id).to.equal(deviceDid);
      expect(res.iidDocument?.controller).to.deep.equal([CONTROLLER]);
    });

    // Last: it adds a collection and claims the listings above count.
    it('a verified claim whose credential is withdrawn is no longer APPROVED: FLAGGED while suspended, INVALIDATED once revoked, and so counted', async () => {
      const client = server.client;
      await createCollection({ client, headers: auth, body: { id: 'kpt-withdrawn', name: 'Withdrawn', selectionDesign: CENSUS } });
      await census(client, 'kpt-withdrawn', ['b11', 'b12']);
      const ref = (await submitClaim({ client, headers: auth, body: claimBody('did:ixo:entity:00000000000000000000000000000b11', 'reference', { collectionId: 'kpt-withdrawn' }) as any })).data!;
      const int = (await submitClaim({ client, headers: auth, body: claimBody('did:ixo:entity:00000000000000000000000000000b12', 'intervention', { collectionId: 'kpt-withdrawn' }) as any })).data!;
      const revoker = { authorization: `Bearer ${await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000dddd', scopes: ['credentials:revoke'] })}` };
      const change = async (id: string, action: 'suspend' | 'revoke') =>
        (await changeCredentialStatus({ client, headers: revoker, path: { id }, body: { action, reason: 'scale found faulty' } })).response.status;
      const status = async (id: string) => (await get(`/chain/claims/claim/${id}`)).body.claim.evaluation.status;
      expect([await status(ref.id), await status(int.id)]).to.deep.equal(['APPROVED', 'APPROVED']);
      expect(await change(ref.id, 'suspend')).to.equal(200);
      expect(await change(int.id, 'revoke')).to.equal(200);
      expect([await status(ref.id), await status(int.id)]).to.deep.equal(['FLAGGED', 'INVALIDATED']);
      expect((await get('/chain/claims/collection/kpt-withdrawn')).body.collection).to.deep.include({ count: '2', evaluated: '2', approved: '0', invalidated: '1', flagged: '1' });
      // The same over gRPC.
      const grpc = createClient(ClaimsQuery, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.hearth.app.locals.chainGrpcPort}` }));
      expect((await grpc.claim({ id: int.id })).claim?.evaluation?.status).to.equal(EvaluationStatus.INVALIDATED);
    });
  });
});
