// Area B over the real area A services: households become twin entities controlled by the
// gateway's principal, and claims go through the same ClaimService as POST /v1/claims.
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { ConfigError, configWith } from '../../src/config.ts';
import { up as withoutCustomerIds } from '../../src/ussd/migrations/401_ussd_household_without_customer_id.ts';
import { CollectionService } from '../../src/twins/index.ts';
import type { UssdTwinsPort } from '../../src/ussd/index.ts';
import { ussdTwinsPort } from '../../src/ussd/twins-adapter.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey } from '../helpers/server.ts';
import { withTwinsArea } from '../twins/fixtures.ts';
import { createAccount, GatewaySession, login, logFuelDays, postUssd, startUssdServer, type UssdTestServer } from './helpers.ts';

const GATEWAY_DID = 'did:ixo:entity:0123456789abcdef0123456789abcdef';

forEachDatabase('USSD with area A (twins and claims)', (t) => {
  let server: UssdTestServer;
  let key: string;
  before(async () => {
    server = await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID });
    key = await createTestKey(t.db, { scopes: ['twins:read', 'claims:read'] });
  });
  after(() => server.stop());
  const get = async (path: string) => {
    const res = await fetch(server.baseUrl + path, { headers: { Authorization: `Bearer ${key}` } });
    return { status: res.status, body: await res.json() };
  };
  /** The claim id behind a short reference a household was shown. */
  const claimIdOf = async (ref: string | undefined) => (await t.db('ussd_claim_refs').where('ref', ref ?? '').first())?.claim_id;

  it('account creation creates the household twin entity, controlled by the gateway principal', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '24680');
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    expect(account.household_did).to.match(/^did:/);
    const entity = await get(`/v1/entities/${encodeURIComponent(account.household_did!)}`);
    expect(entity.status).to.equal(200);
    expect(entity.body.did).to.equal(account.household_did);
    expect(entity.body.type).to.equal('Household');
    expect(entity.body.controller).to.equal(GATEWAY_DID);
    expect(entity.body.properties).to.deep.equal({ channel: 'ussd', village: 'Kibera' });
    // Neither the name nor the Customer ID (half of the login) is readable through area A.
    expect(JSON.stringify(entity.body)).to.not.include('Jane').and.not.include(customerId);
  });

  it('migration 401 takes the Customer ID out of the twins of households created before it', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '24680');
    const { household_did: did } = (await t.db('ussd_accounts').select('household_did').where('customer_id', customerId).first())!;
    // As the twin was stored before: the ID beside the other properties.
    await t.db('twin_entities').update({ properties: JSON.stringify({ customerId, channel: 'ussd', village: 'Kisumu' }) }).where('did', did);
    const other = await t.db('twin_entities').select(['did', 'properties']).where('did', '<>', did).orderBy('did');
    await withoutCustomerIds(t.db);
    const after = await get(`/v1/entities/${encodeURIComponent(did!)}`);
    expect(after.body.properties).to.deep.equal({ channel: 'ussd', village: 'Kisumu' });
    // Entities that are not a USSD household's are left as they were.
    expect(await t.db('twin_entities').select(['did', 'properties']).where('did', '<>', did).orderBy('did')).to.deep.equal(other);
  });

  it('3 logged days become a KPT claim through the claim service; claim status reads it back', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '13579');
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    await logFuelDays(server, s.phoneNumber, customerId, '13579', [['2026-06-01', '2.5'], ['2026-06-02', '3'], ['2026-06-03', '2']]);
    const c = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(c, customerId, '13579');
    expect(await c.send('3')).to.equal('CON Send a claim for 3 days, total 7.5 kg?\n1. Send\n0. Back');
    const end = await c.walk('1', '1', '1', '1');
    // Alone in the collection, the claim waits for the other stove group.
    const waiting = 'Waiting. We are waiting for homes with the other stove to send the same days.';
    const m = /^END Claim sent\. Reference ([A-Z0-9]{8})\. Status: (.+)$/.exec(end);
    expect(m, end).to.not.equal(null);
    expect(m![2]).to.equal(waiting);
    const claim = await get(`/v1/claims/${await claimIdOf(m![1])}`);
    expect(claim.status).to.equal(200);
    expect(claim.body.status).to.equal('pending');
    expect(claim.body.collectionId).to.equal('ussd');
    expect(claim.body.householdId).to.equal(account.household_did);
    expect(claim.body.submittedBy).to.equal(GATEWAY_DID);
    expect(claim.body.fuelMeasurements.dailyLogs).to.deep.equal([2.5, 3, 2]);
    expect(claim.body.fuelMeasurements.total).to.equal(7.5);
    expect(claim.body.testPeriod).to.include({ startDate: '2026-06-01', endDate: '2026-06-03' });
    expect(claim.body.externalFactors).to.deep.equal({ season: 'dry', culturalEvents: ['none'], occupationalFactors: ['farming'] });

    const st = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(st, customerId, '13579');
    const status = await st.send('4');
    expect(status).to.equal(`CON Claim ${m![1]} of ${new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', timeZone: 'UTC' }).format(new Date(claim.body.createdAt))}: ${waiting}\n0. Back`);
  });

  it('days whose claim was stored but not marked (a failure in between) are submitted again, whatever the new answers', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '13570');
    await logFuelDays(server, s.phoneNumber, customerId, '13570', ['2026-07-01', '2026-07-02', '2026-07-03']);
    const submit = async (...answers: string[]) => {
      const c = new GatewaySession([server.baseUrl], s.phoneNumber);
      await login(c, customerId, '13570');
      await c.send('3');
      return c.walk('1', ...answers);
    };
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    const unmark = () => t.db('ussd_fuel_logs').update({ claim_id: null }).where('account_id', account.id);
    const marks = async () => (await t.db('ussd_fuel_logs').where('account_id', account.id)).map((l: { claim_id: string | null }) => l.claim_id);
    const reference = (reply: string) => claimIdOf(/^END Claim sent\. Reference (\S+)\./.exec(reply)?.[1]);
    expect(await reference(await submit('1', '1', '1'))).to.be.a('string');
    await unmark();
    // Other answers for the same days: area A answers (the stored claim, or its correction), never a refusal.
    const second = await reference(await submit('2', '2', '2'));
    expect(second).to.be.a('string');
    expect(await marks()).to.deep.equal([second, second, second]);
    await unmark();
    // The same request again is the same claim.
    expect(await reference(await submit('2', '2', '2'))).to.equal(second);
    expect(await marks()).to.deep.equal([second, second, second]);
  });

  it('a second claim submits only the days logged since the first (no overlap with the first claim)', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '97532');
    await logFuelDays(server, s.phoneNumber, customerId, '97532', ['2026-09-01', '2026-09-02', '2026-09-03']);
    const first = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(first, customerId, '97532');
    expect(await first.walk('3', '1', '1', '1', '1')).to.match(/^END Claim sent\. Reference \S+\. Status: \w+\./);
    await logFuelDays(server, s.phoneNumber, customerId, '97532', ['2026-09-04', '2026-09-05', '2026-09-06']);
    const second = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(second, customerId, '97532');
    expect(await second.send('3')).to.equal('CON Send a claim for 3 days, total 6 kg?\n1. Send\n0. Back');
    const end = await second.walk('1', '1', '1', '1');
    const m = /^END Claim sent\. Reference (\S+)\. Status: \w+\.( .+)?$/.exec(end);
    expect(m, end).to.not.equal(null);
    const claim = await get(`/v1/claims/${await claimIdOf(m![1])}`);
    expect(claim.body.testPeriod).to.include({ startDate: '2026-09-04', endDate: '2026-09-06' });
    expect(claim.body.fuelMeasurements.dailyLogs).to.deep.equal([2, 2, 2]);
  });

  /**
   * A second instance whose port to the real area A is `wrap`ped (to act between area B's steps,
   * as another instance or session would); stopped after `fn`.
   */
  const withWrappedPort = (wrap: (real: UssdTwinsPort) => UssdTwinsPort, fn: (other: UssdTestServer) => Promise<void>) =>
    withTwinsArea(server.config, t.db, async (area) => {
      const other = await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID }, { twins: wrap(ussdTwinsPort(area, GATEWAY_DID, 'ussd')), clock: server.clock });
      try {
        await fn(other);
      } finally {
        await other.stop();
      }
    });

  it('a reading changed while its claim is sent: nothing is stored, the user is asked to submit again, and the next claim holds the new reading (a fraction compares exactly)', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '97533');
    await logFuelDays(server, s.phoneNumber, customerId, '97533', ['2026-10-01', '2026-10-02', '2026-10-03']);
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    // Another session of the account changes a day's reading after this one read the days.
    const changeReading = () => t.db('ussd_fuel_logs').update({ kg: 4.35 }).where('account_id', account.id).where('log_date', '2026-10-02');
    await withWrappedPort(
      (real) => ({ ...real, prepareClaim: async (input) => (await changeReading(), real.prepareClaim(input)) }),
      async (other) => {
        const c = new GatewaySession([other.baseUrl], s.phoneNumber);
        await login(c, customerId, '97533');
        await c.walk('3', '1', '1', '1');
        const reply = await c.send('1');
        expect(reply.startsWith('CON Claim not sent. A reading changed while sending. Please send again.\nServices'), reply).to.equal(true);
      },
    );
    expect(await t.db('kpt_claims').where('household_did', account.household_did), 'no claim stored').to.deep.equal([]);
    const logs = await t.db('ussd_fuel_logs').where('account_id', account.id).orderBy('log_date');
    expect(logs.map((l: { kg: number; claim_id: string | null }) => [Number(l.kg), l.claim_id])).to.deep.equal([[2, null], [4.35, null], [2, null]]);

    const again = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(again, customerId, '97533');
    const end = await again.walk('3', '1', '1', '1', '1');
    const id = await claimIdOf(/^END Claim sent\. Reference (\S+)\./.exec(end)?.[1]);
    expect(id, end).to.be.a('string');
    expect((await get(`/v1/claims/${id}`)).body.fuelMeasurements.dailyLogs).to.deep.equal([2, 4.35, 2]);
    expect((await t.db('ussd_fuel_logs').where('account_id', account.id)).map((l) => l.claim_id)).to.deep.equal([id, id, id]);
  });

  it('an account removed while its household twin is created (taken as abandoned by another instance) leaves no twin behind', async () => {
    const households = async () => (await t.db('twin_entities').count({ n: '*' }).where('type', 'Household').first())!.n;
    const before = Number(await households());
    const s = new GatewaySession([server.baseUrl]);
    await withWrappedPort(
      (real) => ({
        ...real,
        // In the registration's transaction, which holds SQLite's one connection.
        newHousehold: async (trx, input) => (await trx('ussd_accounts').where('customer_id', input.customerId).del(), real.newHousehold(trx, input)),
      }),
      async (other) => {
        const c = new GatewaySession([other.baseUrl], s.phoneNumber);
        await c.dial();
        await c.walk('2', '2', 'Jane Doe', '00', '1', '24680');
        expect(await c.send('24680')).to.equal('END Service temporarily unavailable. Please try again later.');
      },
    );
    expect(Number(await households()), 'no household twin without its account').to.equal(before);
    expect(await t.db('ussd_accounts').where('phone_number', s.phoneNumber)).to.have.length(0);
    await createAccount(s, '24680');
    expect(Number(await households())).to.equal(before + 1);
  });

  /** Sessions of one household, each logged in and at the last question before its claim is sent. */
  const atLastQuestion = async (phone: string, customerId: string, pin: string, count: number) => {
    const sessions: GatewaySession[] = [];
    for (let i = 0; i < count; i++) {
      const c = new GatewaySession([server.baseUrl], phone);
      await login(c, customerId, pin);
      expect(await c.walk('3', '1', '1', '1')).to.match(/^CON /);
      sessions.push(c);
    }
    return sessions;
  };
  const sentRef = (reply: string) => {
    const m = /^END Claim sent\. Reference (\S+)\. Status: /.exec(reply);
    expect(m, reply).to.not.equal(null);
    return m![1]!;
  };

  it('days another session of the household sent meanwhile answer with that claim\'s reference, one after the other or at once', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '86420');
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    const claimsStored = async () => (await t.db('kpt_claims').select('id').where('household_did', account.household_did)).length;
    await logFuelDays(server, s.phoneNumber, customerId, '86420', ['2026-05-01', '2026-05-02', '2026-05-03']);
    const [first, second] = await atLastQuestion(s.phoneNumber, customerId, '86420', 2);
    const ref = sentRef(await first!.send('1'));
    expect(sentRef(await second!.send('1'))).to.equal(ref);
    expect(await claimsStored()).to.equal(1);

    await logFuelDays(server, s.phoneNumber, customerId, '86420', ['2026-05-04', '2026-05-05', '2026-05-06']);
    const racing = await atLastQuestion(s.phoneNumber, customerId, '86420', 4);
    const refs = (await Promise.all(racing.map((c) => c.send('1')))).map(sentRef);
    expect(new Set(refs).size, refs.join()).to.equal(1);
    expect(refs[0]).to.not.equal(ref);
    expect(await claimsStored()).to.equal(2);
  });

  it('some of the confirmed days sent meanwhile in another session\'s shorter claim: not sent, and the household is told why', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '86423');
    await logFuelDays(server, s.phoneNumber, customerId, '86423', ['2026-03-01', '2026-03-02', '2026-03-03']);
    server.clock.now = new Date('2026-03-04T09:00:00Z');
    const [shorter] = await atLastQuestion(s.phoneNumber, customerId, '86423', 1);
    await logFuelDays(server, s.phoneNumber, customerId, '86423', ['2026-03-04']);
    const [longer] = await atLastQuestion(s.phoneNumber, customerId, '86423', 1);
    sentRef(await shorter!.send('1'));
    const reply = await longer!.send('1');
    expect(reply.startsWith('CON Claim not sent. Some of these days are already in another claim.\nServices'), reply).to.equal(true);
  });

  it('a claim sends the days as the household confirmed them: a day logged since waits for the next claim, a reading changed since stops it', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '86421');
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    const marks = async () =>
      (await t.db('ussd_fuel_logs').where('account_id', account.id).orderBy('log_date')).map((l: { log_date: string; claim_id: string | null }) => [l.log_date, l.claim_id]);
    await logFuelDays(server, s.phoneNumber, customerId, '86421', ['2026-04-01', '2026-04-02', '2026-04-03']);
    server.clock.now = new Date('2026-04-04T09:00:00Z');
    const [confirmed] = await atLastQuestion(s.phoneNumber, customerId, '86421', 1);
    // Another session logs today, the day after the confirmed ones.
    await logFuelDays(server, s.phoneNumber, customerId, '86421', ['2026-04-04']);
    const id = await claimIdOf(sentRef(await confirmed!.send('1')));
    const claim = await get(`/v1/claims/${id}`);
    expect(claim.body.testPeriod).to.include({ startDate: '2026-04-01', endDate: '2026-04-03' });
    expect(claim.body.fuelMeasurements.dailyLogs).to.deep.equal([2, 2, 2]);
    expect(await marks()).to.deep.equal([['2026-04-01', id], ['2026-04-02', id], ['2026-04-03', id], ['2026-04-04', null]]);

    await logFuelDays(server, s.phoneNumber, customerId, '86421', ['2026-04-05', '2026-04-06']);
    const [again] = await atLastQuestion(s.phoneNumber, customerId, '86421', 1);
    // Another session changes a confirmed day's reading before this one sends.
    await t.db('ussd_fuel_logs').update({ kg: 3 }).where('account_id', account.id).where('log_date', '2026-04-05');
    const reply = await again!.send('1');
    expect(reply.startsWith('CON Claim not sent. A reading changed while sending. Please send again.\nServices'), reply).to.equal(true);
    expect((await marks()).slice(3)).to.deep.equal([['2026-04-04', null], ['2026-04-05', null], ['2026-04-06', null]]);
  });

  it('after a gap the latest run of consecutive days is submitted; fewer than 3 in a row is explained', async () => {
    const s = new GatewaySession([server.baseUrl]);
    const customerId = await createAccount(s, '97531');
    await logFuelDays(server, s.phoneNumber, customerId, '97531', ['2026-07-01', '2026-07-02', '2026-07-05']);
    const c = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(c, customerId, '97531');
    const reply = await c.send('3');
    // The days that can still be logged, and make a claim, are named.
    expect(reply).to.match(/^CON A claim needs 3 days in a row\. Log the day before yesterday and yesterday too, then send\.\nServices/);
    expect(reply.length).to.be.at.most(182);
    await logFuelDays(server, s.phoneNumber, customerId, '97531', ['2026-07-06', '2026-07-07']);
    const d = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(d, customerId, '97531');
    const end = await d.walk('3', '1', '1', '1', '1');
    const m = /^END Claim sent\. Reference (\S+)\. Status: \w+\.( .+)?$/.exec(end);
    expect(m, end).to.not.equal(null);
    const claim = await get(`/v1/claims/${await claimIdOf(m![1])}`);
    expect(claim.body.testPeriod).to.include({ startDate: '2026-07-05', endDate: '2026-07-07' });
  });
});

/** A partner's census of the households the gateway registers. */
const REGISTERED_CENSUS = { type: 'full-population', frameSource: 'registered-households', frame: 'Households registered over USSD in the programme area', procedure: 'Every registered household' } as const;

forEachDatabase('USSD claims in a KPT campaign (USSD_COLLECTION_ID)', (t) => {
  let server: UssdTestServer;
  let key: string;
  before(async () => {
    // The collection exists before start-up, which checks it.
    await new CollectionService(t.db).create(
      { keyId: 'test', did: GATEWAY_DID, scopes: [] },
      { id: 'ussd-campaign', name: 'USSD campaign', selectionDesign: REGISTERED_CENSUS },
    );
    server = await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID, USSD_COLLECTION_ID: 'ussd-campaign' });
    key = await createTestKey(t.db, { scopes: ['claims:read', 'claims:write'] });
  });
  after(() => server?.stop());

  it('start-up refuses USSD_FUEL_KG_MIN not below USSD_FUEL_KG_MAX; config refuses an unknown USSD_DEFAULT_LANGUAGE', async () => {
    let error: unknown;
    await startUssdServer(t.db, { USSD_FUEL_KG_MIN: '5', USSD_FUEL_KG_MAX: '5' }).then((s) => s.stop(), (err: unknown) => (error = err));
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as Error).message).to.include('USSD_FUEL_KG_MIN: must be less than USSD_FUEL_KG_MAX');
    expect(() => configWith({ USSD_DEFAULT_LANGUAGE: 'fr' })).to.throw(/USSD_DEFAULT_LANGUAGE/);
  });

  it('in production, claims going to the registered households\' census (`ussd`) are a warning at start-up; a campaign collection is not', async () => {
    for (const [collection, warned] of [['ussd', true], ['ussd-campaign', false]] as const) {
      let logs = '';
      const logger = pino({ level: 'warn' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
      const prod = await startUssdServer(t.db, { NODE_ENV: 'production', USSD_PRINCIPAL_DID: GATEWAY_DID, USSD_COLLECTION_ID: collection }, { logger });
      await prod.stop();
      expect(logs.includes('USSD claims go to the full-population campaign of the households registered on this service'), collection).to.equal(warned);
    }
  });

  it("start-up refuses a partner's collection that does not take the gateway's claims; the migrations' `ussd` is entrusted to the gateway", async () => {
    const partner = { keyId: 'test', did: 'did:ixo:entity:000000000000000000000000000p4r7n', scopes: [] };
    const collections = new CollectionService(t.db);
    await collections.create(partner, { id: 'ussd-closed', name: 'Closed', selectionDesign: REGISTERED_CENSUS });
    let error: unknown;
    await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID, USSD_COLLECTION_ID: 'ussd-closed' }).then((s) => s.stop(), (err: unknown) => (error = err));
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as Error).message).to.include(`USSD_COLLECTION_ID: collection "ussd-closed" does not take claims from USSD_PRINCIPAL_DID (${GATEWAY_DID})`);
    // Still the partner's own: start-up changed nothing of it.
    expect(await collections.get('ussd-closed')).to.include({ createdBy: partner.did, openToAll: false }).and.to.have.property('submitters').that.deep.equals([]);

    await collections.create(partner, { id: 'ussd-shared', name: 'Shared', selectionDesign: REGISTERED_CENSUS, submitters: [GATEWAY_DID] });
    await collections.create(partner, { id: 'ussd-self', name: 'Self', selectionDesign: { type: 'self-selected', frame: 'Whoever dials', procedure: 'Households enrol themselves' }, submitters: [GATEWAY_DID] });
    error = undefined;
    await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID, USSD_COLLECTION_ID: 'ussd-self' }).then((s) => s.stop(), (err: unknown) => (error = err));
    expect((error as Error).message).to.include('USSD_COLLECTION_ID: collection "ussd-self" is self-selected, so every USSD claim in it would be rejected');
    await (await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID, USSD_COLLECTION_ID: 'ussd-shared' })).stop();

    // `ussd` takes the configured principal, replacing the one before it.
    const other = 'did:ixo:entity:00000000000000000000000000000ab1';
    await (await startUssdServer(t.db, { USSD_PRINCIPAL_DID: other, USSD_COLLECTION_ID: 'ussd' })).stop();
    expect((await collections.get('ussd')).submitters).to.deep.equal([other]);
    await (await startUssdServer(t.db, { USSD_PRINCIPAL_DID: GATEWAY_DID, USSD_COLLECTION_ID: 'ussd' })).stop();
    expect((await collections.get('ussd')).submitters).to.deep.equal([GATEWAY_DID]);
  });

  it('USSD_DEFAULT_LANGUAGE=sw greets a phone without an account in Kiswahili', async () => {
    const sw = await startUssdServer(t.db, { USSD_DEFAULT_LANGUAGE: 'sw' });
    try {
      expect(await new GatewaySession([sw.baseUrl]).dial()).to.equal('CON Karibu Hearth\n1. Jifunze Zaidi\n2. Akaunti\n9. Lugha / Language\n*. Toka');
    } finally {
      await sw.stop();
    }
  });

  it('USSD_DEFAULT_LANGUAGE=sw: a refused hop and a rate-limited one are answered in Kiswahili too', async () => {
    const sw = await startUssdServer(t.db, { USSD_DEFAULT_LANGUAGE: 'sw', USSD_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      const invalid = await postUssd(sw.baseUrl, { sessionId: 'sw-1', serviceCode: '*384#', phoneNumber: 'not-a-phone', text: '' });
      expect(invalid.status).to.equal(200);
      expect(invalid.text).to.equal('END Ulichoweka si sahihi. Tafadhali jaribu tena.');
      await postUssd(sw.baseUrl, { sessionId: 'sw-2', serviceCode: '*384#', phoneNumber: '+254712345678', text: '' });
      const limited = await postUssd(sw.baseUrl, { sessionId: 'sw-3', serviceCode: '*384#', phoneNumber: '+254712345678', text: '' });
      expect(limited.status).to.equal(429);
      expect(limited.text).to.equal('END Maombi ni mengi mno. Tafadhali jaribu tena baada ya dakika moja.');
    } finally {
      await sw.stop();
    }
  });

  for (const [id, problem] of [
    ['no-such-campaign', 'USSD_COLLECTION_ID: no collection "no-such-campaign" exists'],
    ['default', 'USSD_COLLECTION_ID: collection "default" declares no selectionDesign'],
  ] as const) {
    it(`start-up refuses a USSD_COLLECTION_ID ${id === 'default' ? 'whose collection declares no selection design' : 'naming no collection'}, naming the variable`, async () => {
      let error: unknown;
      await startUssdServer(t.db, { USSD_COLLECTION_ID: id }).then((s) => s.stop(), (err: unknown) => (error = err));
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as Error).message).to.include(problem);
    });
  }

  /** Creates an account on the given stove (1 = old stove: reference, 2 = clean stove: intervention), logs 3 days and submits. */
  const claimOver3Days = async (stove: '1' | '2', pin: string) => {
    const s = new GatewaySession([server.baseUrl]);
    await s.dial();
    const created = await s.walk('2', '2', 'Amina', '00', stove, pin, pin);
    const customerId = /Customer ID is (\d+)/.exec(created)![1]!;
    await logFuelDays(server, s.phoneNumber, customerId, pin, [['2026-08-03', '2.5'], ['2026-08-04', '2.5'], ['2026-08-05', '2.5']]);
    const c = new GatewaySession([server.baseUrl], s.phoneNumber);
    await login(c, customerId, pin);
    const end = await c.walk('3', '1', '1', '1', '1');
    return (await t.db('ussd_claim_refs').where('ref', /Reference (\S+)\./.exec(end)![1]!).first())!.claim_id;
  };

  it('claims go to the configured collection, whose selection design (a census of the registered households) lets a reference/intervention pair verify', async () => {
    const reference = await claimOver3Days('1', '24681');
    const intervention = await claimOver3Days('2', '24683');
    for (const id of [reference, intervention]) {
      const res = await fetch(`${server.baseUrl}/v1/claims/${id}`, { headers: { Authorization: `Bearer ${key}` } });
      const claim = await res.json();
      expect(claim.collectionId).to.equal('ussd-campaign');
      expect(claim.status, JSON.stringify(claim.reasons)).to.equal('verified');
      expect(claim.credential.type).to.equal('KPTCredential');
      expect(claim.verifiableCredential.credentialSubject).to.include({ selectionDesign: 'full-population', selectionFrame: REGISTERED_CENSUS.frame });
    }
  });
});
