// /v1/entities through the generated SDK: protocols, entities from protocols, typed
// relationships, reads, lists and controller-only updates, on SQLite and PostgreSQL.
import { expect } from 'chai';
import { createEntity, getEntity, listEntities, updateEntity } from '../../generated/openapi/sdk.gen.ts';
import type { Entity, EntityCreateRequest, Problem } from '../../generated/openapi/types.gen.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { OTHER_DID, PARTNER_DID, startTwinsHarness, twinsTableContents, type TwinsHarness } from './fixtures.ts';

forEachDatabase('twin entities and protocols', (t) => {
  let h: TwinsHarness;
  let protocol: Entity;
  let oracle: Entity;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  const create = async (body: unknown, key = h.key) => {
    const res = await createEntity({ client: h.server.client, auth: key, body: body as EntityCreateRequest });
    const payload = (res.data ?? res.error) as unknown;
    expectContractResponse('post', '/v1/entities', { status: res.response.status, headers: res.response.headers, body: payload });
    return { status: res.response.status, headers: res.response.headers, entity: payload as Entity, problem: payload as Problem };
  };

  const rejected = async (body: unknown, status: number, key = h.key) => {
    const before = await twinsTableContents(t.db);
    const res = await create(body, key);
    expect(res.status, JSON.stringify(res.problem)).to.equal(status);
    expect(await twinsTableContents(t.db)).to.deep.equal(before);
    return res.problem;
  };

  it('creates a protocol: 201, Location, a did:ixo:entity DID, the caller as controller', async () => {
    oracle = (await create({ type: 'OracleEntity', properties: { model: 'kpt-checker' } })).entity;
    const res = await create({
      type: 'Protocol',
      properties: { model: 'string', ratedPowerW: 'number', certified: 'boolean', specs: 'object', fuels: 'array' },
      relationships: { verifier: 'OracleEntity' },
    });
    expect(res.status).to.equal(201);
    protocol = res.entity;
    expect(protocol.did).to.match(/^did:ixo:entity:[0-9a-f]{32}$/);
    expect(res.headers.get('location')).to.equal(`/v1/entities/${protocol.did}`);
    expect(protocol.controller).to.equal(PARTNER_DID);
  });

  it('refuses a protocol whose property types or relationship types are not type names', async () => {
    const p = await rejected({ type: 'Protocol', properties: { model: 'text' }, relationships: { verifier: 'an oracle!' } }, 400);
    expect(p.errors!.map((e) => [e.pointer, e.rule])).to.deep.equal([
      ['/body/properties/model', 'protocol-property-type'],
      ['/body/relationships/verifier', 'protocol-relationship-type'],
    ]);
  });

  it('creates an entity from the protocol with typed properties, services, credentials and a relationship', async () => {
    const res = await create({
      type: 'CleanCookingDevice',
      protocol: protocol.did,
      properties: { model: 'EcoStove 2', ratedPowerW: 1200, certified: true, specs: { fuel: 'lpg' }, fuels: ['lpg'] },
      relationships: { verifier: oracle.did },
      services: [{ id: '#data', type: 'LinkedDomains', endpoint: 'https://example.org/devices/1' }],
      verifiableCredential: [{ type: 'StoveCertificate', issuer: 'did:ixo:entity:0000000000000000000000000000cccc' }],
      controller: OTHER_DID,
    });
    expect(res.status).to.equal(201);
    expect(res.entity).to.deep.include({ type: 'CleanCookingDevice', protocol: protocol.did, controller: OTHER_DID, relationships: { verifier: oracle.did } });
    const got = await getEntity({ client: h.server.client, auth: h.key, path: { did: res.entity.did } });
    expectContractResponse('get', '/v1/entities/{did}', { status: 200, headers: got.response.headers, body: got.data });
    expect(got.data).to.deep.equal(res.entity);
  });

  it('400 naming each field: undeclared or mistyped properties, undeclared roles, missing or mistyped targets', async () => {
    const device = (await create({ type: 'Device', properties: {} })).entity;
    const p = await rejected(
      {
        type: 'CleanCookingDevice',
        protocol: protocol.did,
        properties: { model: 7, ratedPowerW: '1200', colour: 'red', fuels: 'lpg' },
        relationships: { verifier: device.did, operator: oracle.did },
      },
      400,
    );
    expect(p.errors!.map((e) => [e.pointer, e.rule])).to.have.deep.members([
      ['/body/properties/model', 'property-type'],
      ['/body/properties/ratedPowerW', 'property-type'],
      ['/body/properties/colour', 'property-declared'],
      ['/body/properties/fuels', 'property-type'],
      ['/body/relationships/verifier', 'relationship-target-type'],
      ['/body/relationships/operator', 'relationship-declared'],
    ]);
    const missing = await rejected({ type: 'CleanCookingDevice', protocol: protocol.did, relationships: { verifier: 'did:ixo:entity:ffffffffffffffffffffffffffffffff' } }, 400);
    expect(missing.errors![0]).to.include({ pointer: '/body/relationships/verifier', rule: 'relationship-target-exists' });
    // Names are escaped into RFC 6901 pointers.
    const escaped = await rejected({ type: 'CleanCookingDevice', protocol: protocol.did, properties: { 'a/b~c': 1 } }, 400);
    expect(escaped.errors![0]).to.include({ pointer: '/body/properties/a~1b~0c', rule: 'property-declared' });
    // A name every object inherits is declared only if the protocol declares it.
    const inherited = await rejected(
      { type: 'CleanCookingDevice', protocol: protocol.did, properties: { valueOf: 1, hasOwnProperty: 'x' }, relationships: { constructor: oracle.did } },
      400,
    );
    expect(inherited.errors!.map((e) => [e.pointer, e.rule])).to.have.deep.members([
      ['/body/properties/valueOf', 'property-declared'],
      ['/body/properties/hasOwnProperty', 'property-declared'],
      ['/body/relationships/constructor', 'relationship-declared'],
    ]);
  });

  it('400 when the protocol does not exist or is not a Protocol, and for DID URLs', async () => {
    let p = await rejected({ type: 'Device', protocol: 'did:ixo:entity:ffffffffffffffffffffffffffffffff' }, 400);
    expect(p.errors![0]).to.include({ pointer: '/body/protocol', rule: 'protocol-exists' });
    p = await rejected({ type: 'Device', protocol: oracle.did }, 400);
    expect(p.errors![0]!.message).to.match(/not a Protocol/);
    p = await rejected({ type: 'Device', controller: 'did:ixo:household/123' }, 400);
    expect(p.errors![0]).to.include({ pointer: '/body/controller', rule: 'did-syntax' });
    expect(p.errors![0]!.message).to.match(/DID URL/);
    // The same DID spelt another way (%63 is c) is not taken for another one.
    p = await rejected({ type: 'Device', controller: 'did:ixo:entity:0000000000000000000000000000aa%63' }, 400);
    expect(p.errors![0]).to.include({ pointer: '/body/controller', rule: 'did-syntax' });
    expect(p.errors![0]!.message).to.match(/one spelling/);
    p = await rejected({ type: 'Device', services: [{ id: 'data', type: 'x', endpoint: 'https://e.org' }] }, 400);
    expect(p.errors![0]).to.include({ pointer: '/body/services/0/id', rule: 'pattern' });
  });

  it('400 for services repeating an id, on create and on update (DID Core 1.0 §5.4)', async () => {
    const twice = [{ id: '#a', type: 't', endpoint: 'https://x.example' }, { id: '#b', type: 't', endpoint: 'https://y.example' }, { id: '#a', type: 't', endpoint: 'https://z.example' }];
    const p = await rejected({ type: 'Device', services: twice }, 400);
    expect(p.errors).to.deep.equal([{ pointer: '/body/services/2/id', message: 'repeats the id #a: the services of a DID document have distinct ids (DID Core 1.0 §5.4)', rule: 'service-id-unique' }]);
    const device = (await create({ type: 'Device', services: twice.slice(0, 2) })).entity;
    const update = await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { services: twice } });
    expect(update.response.status).to.equal(400);
    expect((update.error as Problem).errors![0]).to.include({ pointer: '/body/services/2/id', rule: 'service-id-unique' });
    expect((await getEntity({ client: h.server.client, auth: h.key, path: { did: device.did } })).data!.services).to.deep.equal(twice.slice(0, 2));
  });

  it('401 without a key and 403 with a read-only key', async () => {
    await rejected({ type: 'Device' }, 401, 'hth_unknown');
    await rejected({ type: 'Device' }, 403, h.readOnlyKey);
  });

  it('GET 404 for an unknown DID, 400 for a DID URL', async () => {
    const missing = await getEntity({ client: h.server.client, auth: h.key, path: { did: 'did:ixo:entity:ffffffffffffffffffffffffffffffff' } });
    expect(missing.response.status).to.equal(404);
    expectContractResponse('get', '/v1/entities/{did}', { status: 404, headers: missing.response.headers, body: missing.error });
    const didUrl = await getEntity({ client: h.server.client, auth: h.key, path: { did: 'did:ixo:household/123' } });
    expect(didUrl.response.status).to.equal(400);
    expectContractResponse('get', '/v1/entities/{did}', { status: 400, headers: didUrl.response.headers, body: didUrl.error });
    expect((didUrl.error as Problem).errors![0]).to.include({ pointer: '/params/did', rule: 'did-syntax' });
  });

  it('lists with filters (type, protocol, controller, relatedTo + role) and a cursor', async () => {
    const byProtocol = await listEntities({ client: h.server.client, auth: h.key, query: { protocol: protocol.did } });
    expectContractResponse('get', '/v1/entities', { status: 200, headers: byProtocol.response.headers, body: byProtocol.data });
    expect(byProtocol.data!.items.map((e) => e.type)).to.deep.equal(['CleanCookingDevice']);
    const verified = await listEntities({ client: h.server.client, auth: h.key, query: { relatedTo: oracle.did, role: 'verifier' } });
    expect(verified.data!.items.map((e) => e.did)).to.deep.equal(byProtocol.data!.items.map((e) => e.did));
    const wrongRole = await listEntities({ client: h.server.client, auth: h.key, query: { relatedTo: oracle.did, role: 'operator' } });
    expect(wrongRole.data!.items).to.deep.equal([]);
    const byController = await listEntities({ client: h.server.client, auth: h.key, query: { controller: OTHER_DID } });
    expect(byController.data!.items.every((e) => e.controller === OTHER_DID)).to.equal(true);

    for (let i = 0; i < 3; i++) await create({ type: 'PagedThing', properties: { i } });
    const p1 = await listEntities({ client: h.server.client, auth: h.key, query: { type: 'PagedThing', limit: 2 } });
    expect(p1.data!.items.map((e) => e.properties.i)).to.deep.equal([0, 1]);
    const p2 = await listEntities({ client: h.server.client, auth: h.key, query: { type: 'PagedThing', limit: 2, cursor: p1.data!.nextCursor } });
    expect(p2.data!.items.map((e) => e.properties.i)).to.deep.equal([2]);
    expect(p2.data!.nextCursor).to.equal(undefined);
  });

  it('takes raw (unencoded) DIDs in the protocol, controller and relatedTo filters', async () => {
    for (const [name, value] of [['protocol', protocol.did], ['controller', OTHER_DID], ['relatedTo', oracle.did]] as const) {
      const res = await fetch(`${h.server.baseUrl}/v1/entities?${name}=${value}`, { headers: { authorization: `Bearer ${h.key}` } });
      expect(res.status, `${name}=${value}`).to.equal(200);
      expect((await res.json()).items.length, name).to.be.greaterThan(0);
    }
  });

  it('400 for a relationship role name longer than 128 characters, on both databases', async () => {
    const role = 'r'.repeat(129);
    const p = await rejected({ type: 'Device', relationships: { [role]: oracle.did } }, 400);
    expect(p.errors![0]!.pointer).to.equal('/body/relationships');
    expect(p.detail).to.match(/128/);
    expect((await create({ type: 'Device', relationships: { ['r'.repeat(128)]: oracle.did } })).status).to.equal(201);
  });

  it('400 for a DID filter that is not a DID, naming the parameter', async () => {
    for (const name of ['protocol', 'controller', 'relatedTo']) {
      const res = await fetch(`${h.server.baseUrl}/v1/entities?${name}=notadid`, { headers: { authorization: `Bearer ${h.key}` } });
      expect(res.status, name).to.equal(400);
      expect((await res.json()).errors[0], name).to.include({ pointer: `/query/${name}`, rule: 'did-syntax' });
    }
  });

  it('400 for a credential issuer that is a DID URL, on create and on update', async () => {
    const p = await rejected({ type: 'Device', verifiableCredential: [{ type: 'Cert', issuer: 'did:ixo:x/y' }] }, 400);
    expect(p.errors![0]).to.include({ pointer: '/body/verifiableCredential/0/issuer', rule: 'did-syntax' });
    expect(p.errors![0]!.message).to.match(/DID URL/);
    const device = (await create({ type: 'Device' })).entity;
    const before = await twinsTableContents(t.db);
    const upd = await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { verifiableCredential: [{ type: 'Cert', issuer: 'did:x:y#z' }] } });
    expect(upd.response.status).to.equal(400);
    expect((upd.error as Problem).errors![0]).to.include({ pointer: '/body/verifiableCredential/0/issuer', rule: 'did-syntax' });
    expect(await twinsTableContents(t.db)).to.deep.equal(before);
  });

  it('400 for a service endpoint that is not a network URL (javascript:, data:)', async () => {
    for (const endpoint of ['javascript:alert(1)', 'data:text/html,hi']) {
      const p = await rejected({ type: 'Device', services: [{ id: '#x', type: 'LinkedDomains', endpoint }] }, 400);
      expect(p.errors![0]!.pointer).to.equal('/body/services/0/endpoint');
    }
    expect((await create({ type: 'Device', services: [{ id: '#x', type: 'LinkedDomains', endpoint: 'ipfs://bafkreiabc' }] })).status).to.equal(201);
  });

  it('400 for a number too large to be finite anywhere in the body (it would be stored as null)', async () => {
    const cases: [string, string][] = [
      [`{"type":"CleanCookingDevice","protocol":"${protocol.did}","properties":{"ratedPowerW":1.5e400}}`, '/body/properties/ratedPowerW'],
      ['{"type":"Device","properties":{"x":1,"y":{"z":-1e999}}}', '/body/properties/y/z'],
    ];
    for (const [body, pointer] of cases) {
      const before = await twinsTableContents(t.db);
      const res = await fetch(`${h.server.baseUrl}/v1/entities`, { method: 'POST', headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' }, body });
      expect(res.status).to.equal(400);
      expect((await res.json()).errors[0]).to.include({ pointer, rule: 'finite-number' });
      expect(await twinsTableContents(t.db)).to.deep.equal(before);
    }
  });

  it('updates by the controller only, re-checking the protocol', async () => {
    const device = (await create({ type: 'CleanCookingDevice', protocol: protocol.did, properties: { model: 'A' } })).entity;
    const notController = await updateEntity({ client: h.server.client, auth: h.otherKey, path: { did: device.did }, body: { properties: { model: 'B' } } });
    expect(notController.response.status).to.equal(403);
    expectContractResponse('patch', '/v1/entities/{did}', { status: 403, headers: notController.response.headers, body: notController.error });

    const badType = await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { properties: { model: 3 } } });
    expect(badType.response.status).to.equal(400);
    expect((badType.error as Problem).errors![0]).to.include({ pointer: '/body/properties/model', rule: 'property-type' });

    const ok = await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { properties: { model: 'B' }, relationships: { verifier: oracle.did } } });
    expect(ok.response.status).to.equal(200);
    expectContractResponse('patch', '/v1/entities/{did}', { status: 200, headers: ok.response.headers, body: ok.data });
    expect(ok.data).to.deep.include({ properties: { model: 'B' }, relationships: { verifier: oracle.did }, protocol: protocol.did });
    expect(ok.data!.updatedAt >= device.updatedAt).to.equal(true);
    const linked = await listEntities({ client: h.server.client, auth: h.key, query: { relatedTo: oracle.did } });
    expect(linked.data!.items.map((e) => e.did)).to.include(device.did);

    // Handing control over: the new controller may update, the old one no longer.
    await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { controller: OTHER_DID } });
    expect((await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { properties: {} } })).response.status).to.equal(403);
    expect((await updateEntity({ client: h.server.client, auth: h.otherKey, path: { did: device.did }, body: { properties: {} } })).response.status).to.equal(200);

    const missing = await updateEntity({ client: h.server.client, auth: h.key, path: { did: 'did:ixo:entity:ffffffffffffffffffffffffffffffff' }, body: { properties: {} } });
    expect(missing.response.status).to.equal(404);
  });

  it('an update checks what it sends: a protocol edited since does not lock its entities out', async () => {
    const p2 = (await create({ type: 'Protocol', properties: { model: 'string' } })).entity;
    const device = (await create({ type: 'Stove', protocol: p2.did, properties: { model: 'A' } })).entity;
    const edited = await updateEntity({ client: h.server.client, auth: h.key, path: { did: p2.did }, body: { properties: { model: 'number' } } });
    expect(edited.response.status).to.equal(200);
    // A change of other fields goes through; the stored model is no longer what the protocol says.
    const unrelated = await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { services: [] } });
    expect(unrelated.response.status).to.equal(200);
    const stale = await updateEntity({ client: h.server.client, auth: h.key, path: { did: device.did }, body: { properties: { model: 'A' } } });
    expect(stale.response.status).to.equal(400);
    expect((stale.error as Problem).errors![0]).to.include({ pointer: '/body/properties/model', rule: 'property-type' });
  });
});
