import type { Sql } from '../../src/platform/db/sql.ts';
import { expect } from 'chai';
import { createHearth } from '../../src/app.ts';
import { ConfigError, configWith } from '../../src/config.ts';
import { createDb } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { createLogger } from '../../src/platform/logging.ts';
import { listen } from '../../src/platform/server.ts';
import { PinCipher } from '../../src/ussd/pin.ts';
import { UssdRepository } from '../../src/ussd/repository.ts';
import { UssdService } from '../../src/ussd/service.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey } from '../helpers/server.ts';
import { getUssdSessionDebug, listUssdSessions, postUssd as postUssdSdk } from '../../generated/openapi/sdk.gen.ts';
import { createClient } from '../../generated/openapi/client/index.ts';
import { createAccount, GatewaySession, login, newSessionId, postUssd, RecordingTwins, startUssdServer, TEST_PIN_KEY, withTwoInstances, type UssdTestServer } from './helpers.ts';

const INVALID = 'END Invalid input. Please try again.';
const valid = () => ({ sessionId: newSessionId(), serviceCode: '*384*1234#', phoneNumber: '+254712345678', text: '' });

forEachDatabase('USSD request validation', (t) => {
  let server: UssdTestServer;
  before(async () => {
    server = await startUssdServer(t.db);
  });
  after(() => server.stop());

  const cases: [string, Record<string, unknown>][] = [
    ['sessionId missing', { sessionId: undefined }],
    ['sessionId empty', { sessionId: '' }],
    ['sessionId over 100 chars', { sessionId: 'x'.repeat(101) }],
    ['serviceCode missing', { serviceCode: undefined }],
    ['serviceCode without #', { serviceCode: '*384*1234' }],
    ['serviceCode with letters', { serviceCode: '*384*ab#' }],
    ['serviceCode with a trailing star', { serviceCode: '*384*#' }],
    ['phoneNumber missing', { phoneNumber: undefined }],
    ['phoneNumber without +', { phoneNumber: '254712345678' }],
    ['phoneNumber starting +0', { phoneNumber: '+0712345678' }],
    ['phoneNumber too short', { phoneNumber: '+25471' }],
    ['phoneNumber too long', { phoneNumber: '+2547123456789012' }],
    ['text missing', { text: undefined }],
    ['text over 182 chars', { text: '1'.repeat(183) }],
  ];
  for (const form of [false, true]) {
    for (const [name, patch] of cases) {
      it(`${form ? 'form' : 'JSON'}: ${name} -> 200 END Invalid input`, async () => {
        const body = Object.fromEntries(Object.entries({ ...valid(), ...patch }).filter(([, v]) => v !== undefined));
        const res = await postUssd(server.baseUrl, body, { form });
        expect(res.status).to.equal(200);
        expect(res.contentType).to.match(/^text\/plain/);
        expect(res.text).to.equal(INVALID);
      });
    }
  }

  it('JSON fields of the wrong type are END Invalid input, not coerced (text 5 is no dial shortcut)', async () => {
    for (const patch of [{ text: 5 }, { text: null }, { sessionId: 12345 }, { phoneNumber: 254712345678 }]) {
      const res = await postUssd(server.baseUrl, { ...valid(), ...patch });
      expect(res.text, JSON.stringify(patch)).to.equal(INVALID);
    }
  });

  it('limits are inclusive: sessionId of 100 and text of 182 characters are accepted', async () => {
    const res = await postUssd(server.baseUrl, { ...valid(), sessionId: 's'.repeat(100), text: '' });
    expect(res.text).to.match(/^CON Welcome/);
    const long = await postUssd(server.baseUrl, { ...valid(), text: Array(91).fill('0').join('*') });
    expect(long.text).to.match(/^CON /);
  });

  it('form-encoded bodies with extra gateway fields (networkCode) work', async () => {
    const res = await postUssd(server.baseUrl, { ...valid(), networkCode: '63902', serviceCode: '*384*12*3#' }, { form: true });
    expect(res.status).to.equal(200);
    expect(res.text).to.match(/^CON Welcome to Hearth/);
  });

  it('a JSON gateway may send networkCode as a number; one too long to be a network code is ignored; a query on the callback URL is not judged', async () => {
    const networkCodeOf = async (sessionId: string) => (await t.db('ussd_sessions').select('network_code').where('id', sessionId).first())!.network_code;
    const numeric = { ...valid(), networkCode: 63902 };
    expect((await postUssd(server.baseUrl, numeric)).text).to.match(/^CON Welcome to Hearth/);
    expect(await networkCodeOf(numeric.sessionId)).to.equal('63902');
    const long = { ...valid(), networkCode: '6'.repeat(40) };
    expect((await postUssd(server.baseUrl, long)).text).to.match(/^CON Welcome to Hearth/);
    expect(await networkCodeOf(long.sessionId)).to.equal(null);
    const tagged = valid();
    const res = await fetch(`${server.baseUrl}/api/ussd?tag=ke-1&token=abc`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(tagged).toString() });
    expect(await res.text()).to.match(/^CON Welcome to Hearth/);
    const event = await fetch(`${server.baseUrl}/api/ussd/events?tag=ke-1`, {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ sessionId: tagged.sessionId, status: 'Success' }).toString(),
    });
    expect(event.status).to.equal(200);
    expect(await event.json()).to.deep.equal({ sessionId: tagged.sessionId, recorded: true });
    // The end-of-session notification of a JSON gateway carries the same numeric networkCode.
    const jsonEvent = await fetch(`${server.baseUrl}/api/ussd/events`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ sessionId: numeric.sessionId, status: 'Success', networkCode: 63902 }),
    });
    expect(jsonEvent.status).to.equal(200);
    const nullEvent = await fetch(`${server.baseUrl}/api/ussd/events`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ sessionId: long.sessionId, status: 'Success', networkCode: null }),
    });
    expect(nullEvent.status).to.equal(200);
    // Neither text nor a whole number: ignored, never a refused hop.
    for (const networkCode of [null, true, 1.5, { mcc: 639 }, [63902]]) {
      const odd = { ...valid(), networkCode };
      expect((await postUssd(server.baseUrl, odd)).text, JSON.stringify(networkCode)).to.match(/^CON Welcome to Hearth/);
      expect(await networkCodeOf(odd.sessionId)).to.equal(null);
    }
  });

  it('malformed JSON and a non-object body are END Invalid input', async () => {
    const bad = await fetch(`${server.baseUrl}/api/ussd`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"sessionId":' });
    expect(await bad.text()).to.equal(INVALID);
    const arr = await fetch(`${server.baseUrl}/api/ussd`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '[]' });
    expect(await arr.text()).to.equal(INVALID);
  });

  it('a wrong method on /api/ussd is a 405 with Allow: POST, in the route\'s only shape (text/plain END)', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'OPTIONS']) {
      const res = await fetch(`${server.baseUrl}/api/ussd`, { method });
      expect(res.status, method).to.equal(405);
      expect(res.headers.get('allow'), method).to.equal('POST');
      expect(res.headers.get('content-type'), method).to.match(/^text\/plain/);
      expect(await res.text(), method).to.equal(INVALID);
    }
    const head = await fetch(`${server.baseUrl}/api/ussd`, { method: 'HEAD' });
    expect(head.status).to.equal(405);
    expect(head.headers.get('content-type')).to.match(/^text\/plain/);
  });

  it('the generated SDK call matches the contract', async () => {
    const client = createClient({ baseUrl: server.baseUrl });
    const res = await postUssdSdk({ client, body: valid(), parseAs: 'text' });
    expect(res.response.status).to.equal(200);
    expectContractResponse('POST', '/api/ussd', { status: res.response.status, headers: res.response.headers, body: res.data });
  });
});

forEachDatabase('USSD sessions across instances, expiry and failures', (t) => {
  it('two app instances on one database continue the same session, hop by hop', async () => {
    await withTwoInstances(t.db, () => t.open(), async (a, b) => {
      const s = new GatewaySession([a.baseUrl, b.baseUrl]);
      expect(await s.dial()).to.match(/^CON Welcome/);
      expect(await s.send('2')).to.match(/^CON Account Menu/);
      expect(await s.send('2')).to.match(/^CON Enter your full name/);
      expect(await s.walk('Jane Doe', '00', '2', '24680')).to.match(/^CON Enter the PIN again/);
      expect(await s.send('24680')).to.match(/^END Account created/);
      // concurrent retries of one hop on both instances get one answer and one effect
      const id = (await t.db('ussd_accounts').where('phone_number', s.phoneNumber).first())!.customer_id;
      const l = new GatewaySession([a.baseUrl, b.baseUrl], s.phoneNumber);
      await login(l, id, '24680');
      await l.walk('1', '1');
      const text = `${l.text}*3`;
      const body = { sessionId: l.sessionId, serviceCode: l.serviceCode, phoneNumber: l.phoneNumber, text };
      const [x, y] = (await Promise.all([postUssd(a.baseUrl, body), postUssd(b.baseUrl, body)])).map((r) => r.text);
      expect(x).to.equal(y);
      expect(x).to.match(/^CON Saved 3 kg/);
      const acc = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      expect(await t.db('ussd_fuel_logs').where('account_id', acc.id)).to.have.length(1);
    });
  });

  it('a late repeat of an earlier hop (or of the dial) changes nothing: it gets the screen the session is on, and the next real hop goes on from there', async () => {
    await withTwoInstances(t.db, () => t.open(), async (a, b) => {
      const s = new GatewaySession([a.baseUrl, b.baseUrl]);
      const id = await createAccount(s);
      const l = new GatewaySession([a.baseUrl, b.baseUrl], s.phoneNumber);
      await login(l, id, '24680');
      const asking = await l.walk('1', '1');
      expect(asking).to.match(/^CON Enter kg of fuel used today/);
      // The gateway repeats the hop `2` (Account Menu) and the dial, late.
      for (const late of ['2', '2*1', '']) {
        const hop = await postUssd(a.baseUrl, { sessionId: l.sessionId, serviceCode: l.serviceCode, phoneNumber: l.phoneNumber, text: late });
        expect(hop.text, JSON.stringify(late)).to.equal(asking);
      }
      const account = (await t.db('ussd_accounts').select('id').where('customer_id', id).first())!;
      expect(await t.db('ussd_fuel_logs').where('account_id', account.id)).to.deep.equal([]);
      expect(await l.send('2.5')).to.match(/^CON Saved 2\.5 kg for today/);
      expect((await t.db('ussd_fuel_logs').select('kg').where('account_id', account.id)).map((r) => Number(r.kg))).to.deep.equal([2.5]);
    });
  });

  it("another phone number or service code on a session's id is END Invalid input and leaves the session as it was", async () => {
    const server = await startUssdServer(t.db, {}, { twins: new RecordingTwins() });
    try {
      const s = new GatewaySession([server.baseUrl]);
      const id = await createAccount(s, '24681');
      const l = new GatewaySession([server.baseUrl], s.phoneNumber);
      await login(l, id, '24681');
      const before = (await t.db('ussd_sessions').where('id', l.sessionId).first())!;
      for (const other of [{ phoneNumber: '+447700900123' }, { serviceCode: '*999#' }]) {
        const res = await postUssd(server.baseUrl, { sessionId: l.sessionId, serviceCode: l.serviceCode, phoneNumber: l.phoneNumber, text: `${l.text}*2`, ...other });
        expect(res.text).to.equal('END Invalid input. Please try again.');
      }
      expect(await t.db('ussd_sessions').where('id', l.sessionId).first()).to.deep.equal(before);
      expect(await l.send('2')).to.match(/^CON /);
    } finally {
      await server.stop();
    }
  });

  it('concurrent wrong PINs over two instances get three comparisons between them, then the lock', async () => {
    await withTwoInstances(t.db, () => t.open(), async (a, b) => {
      const s = new GatewaySession([a.baseUrl]);
      const id = await createAccount(s, '24680');
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => login(new GatewaySession([i % 2 ? a.baseUrl : b.baseUrl], s.phoneNumber), id, String(13570 + i))),
      );
      const account = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      expect(account.failed_pin_attempts).to.equal(3);
      expect(account.locked_at).to.not.equal(null);
      // Two "attempts left" notices at most: every other guess was refused by the lock unchecked.
      expect(replies.filter((r) => /left/.test(r)).length).to.be.at.most(2);
      expect(await login(new GatewaySession([a.baseUrl], s.phoneNumber), id, '24680')).to.not.match(/Welcome/);
    });
  });

  it("concurrent first readings of one day over two instances are all saved or updated, none fails", async () => {
    await withTwoInstances(t.db, () => t.open(), async (a, b) => {
      const s = new GatewaySession([a.baseUrl]);
      const id = await createAccount(s, '24680');
      const sessions = Array.from({ length: 12 }, (_, i) => new GatewaySession([i % 2 ? a.baseUrl : b.baseUrl], s.phoneNumber));
      for (const l of sessions) await login(l, id, '24680');
      const replies = await Promise.all(sessions.map((l, i) => l.walk('1', '1', String(2 + i / 10))));
      for (const reply of replies) expect(reply).to.match(/^CON (Saved|Changed)/);
      const account = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      expect(await t.db('ussd_fuel_logs').where('account_id', account.id)).to.have.length(1);
    });
  });

  it('an idle session expires: expired reply, gone from debug and list; a new dial with the id starts over', async () => {
    const server = await startUssdServer(t.db, { USSD_SESSION_IDLE_SECONDS: '60', USSD_DEBUG_ENABLED: 'true' });
    const key = await createTestKey(t.db, { scopes: ['ussd:debug'] });
    try {
      const s = new GatewaySession([server.baseUrl]);
      await s.dial();
      await s.send('1');
      server.clock.now = new Date(server.clock.now.getTime() + 59_000);
      expect(await s.send('1')).to.match(/^CON Clean cookstoves/);
      server.clock.now = new Date(server.clock.now.getTime() + 61_000);
      const auth = { Authorization: `Bearer ${key}` };
      const list = await (await fetch(`${server.baseUrl}/api/ussd/sessions`, { headers: auth })).json();
      expect(list.activeSessions).to.not.include(s.sessionId);
      const dbg = await fetch(`${server.baseUrl}/api/ussd/debug/${s.sessionId}`, { headers: auth });
      expect(dbg.status).to.equal(404);
      expect(await dbg.json()).to.deep.equal({ error: 'Session not found' });
      expect(await s.send('0')).to.equal('END Your session has expired. Please dial *384*1234# again.');
      expect(await s.post('')).to.match(/^CON Welcome/);
    } finally {
      await server.stop();
    }
  });

  it('a retry after the expired reply gets it again and replays nothing (no fuel saved, no PIN attempt counted)', async () => {
    const twins = new RecordingTwins();
    const server = await startUssdServer(t.db, { USSD_SESSION_IDLE_SECONDS: '60' }, { twins });
    try {
      const s = new GatewaySession([server.baseUrl]);
      const id = await createAccount(s, '24681');
      const fuel = new GatewaySession([server.baseUrl], s.phoneNumber);
      await login(fuel, id, '24681');
      await fuel.walk('1', '1', '3');
      const wrong = new GatewaySession([server.baseUrl], s.phoneNumber);
      expect(await login(wrong, id, '11112')).to.match(/^CON Wrong PIN/);
      // the next day: a replay would save a second day and count the wrong PIN again
      server.clock.now = new Date(server.clock.now.getTime() + 86_400_000);
      const expiredReply = 'END Your session has expired. Please dial *384*1234# again.';
      expect(await fuel.send('1')).to.equal(expiredReply);
      expect(await fuel.retry()).to.equal(expiredReply);
      expect(await fuel.send('2')).to.equal(expiredReply);
      expect(await wrong.send('1')).to.equal(expiredReply);
      expect(await wrong.retry()).to.equal(expiredReply);
      const account = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      expect(account.failed_pin_attempts).to.equal(1);
      expect(await t.db('ussd_fuel_logs').where('account_id', account.id)).to.have.length(1);
      expect((await t.db('ussd_sessions').where('id', fuel.sessionId).first())!.status).to.equal('expired');
      // a dial with the id starts over
      expect(await fuel.post('')).to.match(/^CON Welcome/);
      expect(await fuel.post('1')).to.match(/^CON Know More/);
    } finally {
      await server.stop();
    }
  });

  it('a menu step another session already took is answered from memory, alike in reply and stored row; steps with effects always run', async () => {
    const service = new UssdService(new UssdRepository(t.db), {
      db: t.db, appName: 'Hearth', idleSeconds: 180, pins: new PinCipher(Buffer.from(TEST_PIN_KEY, 'hex')), twins: new RecordingTwins(), logger: createLogger(configWith()),
    });
    const remembered = () => service.menus.remembered;
    const walk = async (sessionId: string, texts: string[]) => {
      const replies: string[] = [];
      for (const text of texts) replies.push(await service.handle({ sessionId, serviceCode: '*384*1234#', phoneNumber: '+254712345678', text }));
      return replies;
    };
    const row = (id: string) => t.db('ussd_sessions').select(['snapshot', 'state', 'last_reply', 'status']).where('id', id).first();

    const first = await walk('memo-1', ['', '1', '1*2']);
    expect(first[2]).to.match(/^CON /);
    expect(remembered()).to.equal(2);
    const second = await walk('memo-2', ['', '1', '1*2']);
    expect(second).to.deep.equal(first);
    expect(remembered()).to.equal(2);
    expect(await row('memo-2')).to.deep.equal(await row('memo-1'));

    const created = await walk('memo-account', ['', '2', '2*2', '2*2*Jane Doe', '2*2*Jane Doe*Kibera', '2*2*Jane Doe*Kibera*2', '2*2*Jane Doe*Kibera*2*24680', '2*2*Jane Doe*Kibera*2*24680*24680']);
    const customerId = /Customer ID is (\d+)/.exec(created.at(-1)!)![1]!;
    for (const id of ['memo-pin-1', 'memo-pin-2']) {
      const before = remembered();
      const replies = await walk(id, ['', '2', '2*1', `2*1*${customerId}`, `2*1*${customerId}*11111`]);
      expect(replies.at(-1)).to.match(/PIN/);
      // The wrong PIN ran its effect (counted on the account) and was not remembered.
      expect(remembered()).to.be.at.most(before + 3);
    }
    const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
    expect(account.failed_pin_attempts).to.equal(2);
  });

  /** A service on the database and clock of `server` (idle time 60 s), whose sweep a test runs when it chooses. */
  const sweeperFor = (server: UssdTestServer) =>
    new UssdService(new UssdRepository(t.db), {
      db: t.db, appName: 'Hearth', idleSeconds: 60, pins: new PinCipher(Buffer.alloc(32)), twins: new RecordingTwins(), logger: createLogger(configWith()), now: () => server.clock.now,
    });

  it('the sweep removes closed sessions and long-expired ones; a just-expired one still gets the expired reply', async () => {
    const server = await startUssdServer(t.db, { USSD_SESSION_IDLE_SECONDS: '60' });
    const service = sweeperFor(server);
    try {
      const closed = new GatewaySession([server.baseUrl]);
      await closed.dial();
      await closed.send('*');
      const stale = new GatewaySession([server.baseUrl]);
      await stale.dial();
      server.clock.now = new Date(server.clock.now.getTime() + 90_000);
      const late = new GatewaySession([server.baseUrl]);
      await late.dial();
      server.clock.now = new Date(server.clock.now.getTime() + 80_000);
      const fresh = new GatewaySession([server.baseUrl]);
      await fresh.dial();
      // stale expired 110 s ago (more than one idle period): removed; late expired 20 s ago: kept
      expect(await service.sweep()).to.be.at.least(2);
      const ids = (await t.db('ussd_sessions').select('id')).map((r) => r.id);
      expect(ids).to.include.members([fresh.sessionId, late.sessionId]);
      expect(ids).to.not.include(closed.sessionId);
      expect(ids).to.not.include(stale.sessionId);
      expect(await late.send('1')).to.equal('END Your session has expired. Please dial *384*1234# again.');
    } finally {
      await server.stop();
    }
  });

  it('a session closed just now survives the sweep: the retry of its last hop gets the stored reply, not a replay', async () => {
    const server = await startUssdServer(t.db, { USSD_SESSION_IDLE_SECONDS: '60' });
    const service = sweeperFor(server);
    try {
      const s = new GatewaySession([server.baseUrl]);
      await s.dial();
      const goodbye = await s.send('*');
      expect(goodbye).to.match(/^END /);
      server.clock.now = new Date(server.clock.now.getTime() + 30_000);
      await service.sweep();
      expect(await s.retry()).to.equal(goodbye);
      // Two idle periods after its last hop it is gone.
      server.clock.now = new Date(server.clock.now.getTime() + 100_000);
      await service.sweep();
      expect(await t.db('ussd_sessions').where('id', s.sessionId).first()).to.equal(undefined);
    } finally {
      await server.stop();
    }
  });

  it('a late retry of a swept session is told it expired, in its language, and replays nothing (no PIN attempt, no reading); its id is forgotten a day later', async () => {
    const server = await startUssdServer(t.db, { USSD_SESSION_IDLE_SECONDS: '60' });
    const service = sweeperFor(server);
    try {
      const s = new GatewaySession([server.baseUrl]);
      const customerId = await createAccount(s, '24680');
      const account = (await t.db('ussd_accounts').where('customer_id', customerId).first())!;
      const readings = async () => (await t.db('ussd_fuel_logs').select('kg').where('account_id', account.id)).map((r: { kg: number }) => Number(r.kg));
      const first = new GatewaySession([server.baseUrl], s.phoneNumber);
      await first.dial();
      await first.walk('9', '2', '2', '1', customerId, '24680');
      expect(await first.walk('1', '1', '4')).to.match(/^CON Kilo 4 zimehifadhiwa kwa leo\./);
      // Another session changes the reading and the PIN.
      const second = new GatewaySession([server.baseUrl], s.phoneNumber);
      await login(second, customerId, '24680');
      await second.walk('1', '1', '6');
      expect(await second.walk('5', '24680', '13579', '13579')).to.match(/^CON /);
      server.clock.now = new Date(server.clock.now.getTime() + 200_000);
      await service.sweep();
      expect(await t.db('ussd_sessions').where('id', first.sessionId).first()).to.equal(undefined);
      expect(await first.retry()).to.match(/^END Muda wa kipindi chako umekwisha\./);
      expect(await readings()).to.deep.equal([6]);
      const after = (await t.db('ussd_accounts').where('id', account.id).first())!;
      expect(Number(after.failed_pin_attempts)).to.equal(0);
      expect(await t.db('ussd_sessions').where('id', first.sessionId).first(), 'no session replayed').to.equal(undefined);
      // A day on, the id is forgotten.
      server.clock.now = new Date(server.clock.now.getTime() + 86_400_000);
      await service.sweep();
      expect(await t.db('ussd_swept_sessions').where('id', first.sessionId).first()).to.equal(undefined);
    } finally {
      await server.stop();
    }
  });

  it('the sweep removes any number of sessions, in batches, and remembers each one swept', async () => {
    const server = await startUssdServer(t.db, { USSD_SESSION_IDLE_SECONDS: '60' });
    const service = sweeperFor(server);
    try {
      const long = new Date(server.clock.now.getTime() - 3_600_000).toISOString();
      const ids = Array.from({ length: 1001 }, (_, i) => `bulk-${i}-${newSessionId()}`);
      for (let i = 0; i < ids.length; i += 100) {
        await t.db('ussd_sessions').insert(ids.slice(i, i + 100).map((id) => ({
          id, phone_number: '+254700000000', service_code: '*384*1234#', snapshot: JSON.stringify({ context: { lang: 'sw' } }), state: 'welcome',
          is_authenticated: false, last_text_digest: '', last_text_length: 0, last_reply: 'CON', status: 'active', version: 1, created_at: long, updated_at: long, expires_at: long,
        })));
      }
      expect(await service.sweep()).to.equal(1001);
      const swept = await t.db('ussd_swept_sessions').select(['id', 'language']).where('id', 'like', 'bulk-%');
      expect(swept.map((r: { id: string }) => r.id).sort()).to.deep.equal([...ids].sort());
      expect(new Set(swept.map((r: { language: string }) => r.language))).to.deep.equal(new Set(['sw']));
    } finally {
      await server.stop();
    }
  });

  it("a hop refused or failed mid-session is answered in the session's language: text past 182 characters, then the database down", async () => {
    const db = t.open();
    const server = await startUssdServer(db);
    try {
      const s = new GatewaySession([server.baseUrl]);
      await s.dial();
      expect(await s.walk('9', '2')).to.match(/^CON Lugha: Kiswahili\./);
      const tooLong = await postUssd(server.baseUrl, { sessionId: s.sessionId, serviceCode: s.serviceCode, phoneNumber: s.phoneNumber, text: `9*2${'*0'.repeat(95)}` });
      expect(tooLong.text).to.equal('END Ulichoweka si sahihi. Tafadhali jaribu tena.');
      // A session of a Kiswahili account refused at its first hop after the dial: Kiswahili too.
      const account = new GatewaySession([server.baseUrl]);
      await account.dial();
      await account.walk('9', '2');
      expect(await account.walk('2', '2', 'Amina Otieno', '00', '2', '24680', '24680')).to.match(/^END /);
      const again = new GatewaySession([server.baseUrl], account.phoneNumber);
      expect(await again.dial()).to.match(/^CON Karibu/);
      const refused = await postUssd(server.baseUrl, { sessionId: again.sessionId, serviceCode: again.serviceCode, phoneNumber: again.phoneNumber, text: 'x'.repeat(183) });
      expect(refused.text).to.equal('END Ulichoweka si sahihi. Tafadhali jaribu tena.');
      await db.destroy();
      expect(await s.send('1')).to.equal('END Huduma haipatikani kwa sasa. Tafadhali jaribu tena baadaye.');
      // A session this instance never served: USSD_DEFAULT_LANGUAGE.
      expect((await postUssd(server.baseUrl, valid())).text).to.equal('END Service temporarily unavailable. Please try again later.');
    } finally {
      await server.stop();
    }
  });

  it('database down: END Service temporarily unavailable', async () => {
    const db = t.open();
    const server = await startUssdServer(db);
    try {
      await db.destroy();
      const res = await postUssd(server.baseUrl, valid());
      expect(res.status).to.equal(200);
      expect(res.text).to.equal('END Service temporarily unavailable. Please try again later.');
    } finally {
      await server.stop();
    }
  });

  it('area A failing during account creation: END Service temporarily unavailable, no account, no orphan household', async () => {
    // The account row exists (without a household DID) when the household is asked for.
    const seen: ({ household_did: string | null } | undefined)[] = [];
    const failing = Object.assign(new RecordingTwins(), {
      // In the registration's transaction, which holds SQLite's one connection.
      newHousehold: async (trx: Sql, input: { customerId: string }) => {
        seen.push(await trx('ussd_accounts').where('customer_id', input.customerId).first());
        throw new Error('twins store unreachable');
      },
    });
    const server = await startUssdServer(t.db, {}, { twins: failing });
    try {
      const s = new GatewaySession([server.baseUrl]);
      await s.dial();
      await s.walk('2', '2', 'Jane Doe', '00', '1', '24680');
      expect(await s.send('24680')).to.equal('END Service temporarily unavailable. Please try again later.');
      expect(await t.db('ussd_accounts').where('phone_number', s.phoneNumber)).to.have.length(0);
      expect(seen).to.have.length(1);
      expect(seen[0], 'account inserted before the household').to.not.equal(undefined);
      expect(seen[0]!.household_did).to.equal(null);
      // the phone is free again: a later attempt creates the account
      const ok = await startUssdServer(t.db, {}, { twins: new RecordingTwins() });
      try {
        const again = new GatewaySession([ok.baseUrl], s.phoneNumber);
        await again.dial();
        expect(await again.walk('2', '2', 'Jane Doe', '00', '1', '24680', '24680')).to.match(/^END Account created/);
      } finally {
        await ok.stop();
      }
    } finally {
      await server.stop();
    }
  });

  it('a hop abandoned mid-way (its instance died) ends the session for its retries once it is 30 s old', async () => {
    const server = await startUssdServer(t.db, {}, { twins: new RecordingTwins() });
    try {
      const s = new GatewaySession([server.baseUrl]);
      await s.dial();
      // What a hop leaves behind when its process dies after claiming it: the new text's mark, no reply.
      const row = (await t.db('ussd_sessions').where('id', s.sessionId).first())!;
      await t.db('ussd_sessions')
        .where('id', s.sessionId)
        .update({
          last_text_digest: new PinCipher(Buffer.from(TEST_PIN_KEY, 'hex')).digest('2'), last_text_length: 1, last_reply: null,
          version: row.version + 1, updated_at: server.clock.now.toISOString(),
        });
      server.clock.now = new Date(server.clock.now.getTime() + 31_000);
      const ended = 'END This session has ended. Please dial *384*1234# again.';
      expect(await s.send('2')).to.equal(ended);
      expect(await s.retry()).to.equal(ended);
      expect(await t.db('ussd_sessions').where('id', s.sessionId).first()).to.include({ status: 'closed', last_reply: ended });
    } finally {
      await server.stop();
    }
  });

  it('an account whose creation died before its household (a crash) frees the phone once it is a minute old', async () => {
    const server = await startUssdServer(t.db, {}, { twins: new RecordingTwins() });
    try {
      const phone = '+254700111222';
      const leftover = (createdAt: Date) => ({
        id: `acc_${createdAt.getTime()}`, customer_id: String(createdAt.getTime()).slice(-8), phone_number: phone, name: 'Jane Doe', village: null,
        test_group: 'reference', household_did: null, pin_encrypted: 'v1.x.y.z', failed_pin_attempts: 0, locked_at: null,
        created_at: createdAt.toISOString(), updated_at: createdAt.toISOString(),
      });
      // Seconds old: possibly a creation still running on another instance; the phone stays taken.
      await t.db('ussd_accounts').insert(leftover(new Date(server.clock.now.getTime() - 5_000)));
      const s1 = new GatewaySession([server.baseUrl], phone);
      await s1.dial();
      expect(await s1.walk('2', '2')).to.match(/already has an account/);
      // Two minutes later it is abandoned: removed, and the account is created.
      server.clock.now = new Date(server.clock.now.getTime() + 120_000);
      const s2 = new GatewaySession([server.baseUrl], phone);
      await s2.dial();
      expect(await s2.walk('2', '2', 'Jane Doe', '00', '1', '24680', '24680')).to.match(/^END Account created/);
      const accounts = await t.db('ussd_accounts').where('phone_number', phone);
      expect(accounts).to.have.length(1);
      expect(accounts[0]!.household_did).to.match(/^did:/);
    } finally {
      await server.stop();
    }
  });
});

forEachDatabase('USSD operator endpoints', (t) => {
  it('are off unless USSD_DEBUG_ENABLED=true, even with a ussd:debug key', async () => {
    const server = await startUssdServer(t.db);
    const key = await createTestKey(t.db, { scopes: ['ussd:debug'] });
    try {
      for (const path of ['/api/ussd/sessions', '/api/ussd/debug/abc']) {
        const res = await fetch(server.baseUrl + path, { headers: { Authorization: `Bearer ${key}` } });
        expect(res.status).to.equal(404);
        // The whole path, not the part after the router's mount point.
        expect(((await res.json()) as { detail: string }).detail).to.equal(`No route for GET ${path}.`);
      }
    } finally {
      await server.stop();
    }
  });

  it('need a key with scope ussd:debug; show the B3/B4 shapes with a redacted context', async () => {
    const server = await startUssdServer(t.db, { USSD_DEBUG_ENABLED: 'true' }, { twins: new RecordingTwins() });
    const client = createClient({ baseUrl: server.baseUrl });
    const debugKey = await createTestKey(t.db, { scopes: ['ussd:debug'] });
    const otherKey = await createTestKey(t.db, { scopes: ['twins:read'] });
    try {
      const s = new GatewaySession([server.baseUrl], '+254712345678');
      await s.dial();

      const none = await listUssdSessions({ client });
      expect(none.response.status).to.equal(401);
      const wrong = await listUssdSessions({ client, headers: { Authorization: `Bearer ${otherKey}` } });
      expect(wrong.response.status).to.equal(403);

      const auth = { Authorization: `Bearer ${debugKey}` };
      const list = await listUssdSessions({ client, headers: auth });
      expect(list.response.status).to.equal(200);
      expectContractResponse('GET', '/api/ussd/sessions', { status: 200, headers: list.response.headers, body: list.data });
      expect(list.data!.activeSessions).to.include(s.sessionId);
      expect(list.data!.count).to.equal(list.data!.activeSessions.length);

      const dbg = await getUssdSessionDebug({ client, headers: auth, path: { sessionId: s.sessionId } });
      expect(dbg.response.status).to.equal(200);
      expectContractResponse('GET', '/api/ussd/debug/{sessionId}', { status: 200, headers: dbg.response.headers, body: dbg.data });
      expect(dbg.data).to.deep.equal({
        sessionId: s.sessionId,
        debugInfo: {
          state: 'preMenu',
          status: 'active',
          context: { sessionId: s.sessionId, phoneNumber: '+254*******78', message: 'Welcome to Hearth\n1. Know More\n2. Account Menu\n9. Language / Lugha\n*. Exit', isAuthenticated: false },
        },
        activeSessions: list.data!.activeSessions,
      });

      // mid account creation: no name, no PIN material in the debug output
      await s.walk('2', '2', 'Jane Doe', '00', '1', '24680');
      const mid = await getUssdSessionDebug({ client, headers: auth, path: { sessionId: s.sessionId } });
      const text = JSON.stringify(mid.data);
      expect(mid.data!.debugInfo.state).to.equal('createPinConfirm');
      for (const secret of ['24680', 'Jane', 'v1.', '712345678']) expect(text).to.not.include(secret);

      const message = async (id: string) => (await getUssdSessionDebug({ client, headers: auth, path: { sessionId: id } })).data!.debugInfo.context.message;
      // after login and after a review of logged days: the menu, no name, dates, amounts or claim ids
      const twins = new RecordingTwins();
      const other = await startUssdServer(t.db, { USSD_DEBUG_ENABLED: 'true' }, { twins, clock: server.clock });
      try {
        const c = new GatewaySession([other.baseUrl], '+254712340001');
        const customerId = await createAccount(c, '97531', 'Zawadi Otieno');
        const l = new GatewaySession([other.baseUrl], c.phoneNumber);
        expect(await login(l, customerId, '97531')).to.match(/^CON Welcome, Zawadi\./);
        expect(await message(l.sessionId)).to.equal('Services\n1. Log fuel used\n2. Review logged days\n3. Send claim\n4. Claim status\n5. Change PIN\n0. Back');
        expect(await l.walk('1', '1', '2.75')).to.match(/^CON Saved 2\.75 kg for today/);
        expect(await message(l.sessionId)).to.not.match(/2\.75|2026|Saved/);
        expect(await l.send('2')).to.match(/^CON Logged: 1 day, total 2\.75 kg\n2 March: 2\.75 kg/);
        const review = await message(l.sessionId);
        expect(review).to.equal('Logged days [redacted]\n0. Back');
        for (const secret of ['Zawadi', customerId, '2026', '2.75', '97531']) expect(JSON.stringify(review)).to.not.include(secret);
        await l.walk('0', '4');
        expect(await message(l.sessionId)).to.equal('Claim status [redacted]\n0. Back');
      } finally {
        await other.stop();
      }

      const missing = await fetch(`${server.baseUrl}/api/ussd/debug/nope`, { headers: auth });
      expect(missing.status).to.equal(404);
      const body = await missing.json();
      expect(body).to.deep.equal({ error: 'Session not found' });
      expectContractResponse('GET', '/api/ussd/debug/{sessionId}', { status: 404, headers: missing.headers, body });

      const tooLong = await fetch(`${server.baseUrl}/api/ussd/debug/${'x'.repeat(101)}`, { headers: auth });
      expect(tooLong.status).to.equal(400);
      expectContractResponse('GET', '/api/ussd/debug/{sessionId}', { status: 400, headers: tooLong.headers, body: await tooLong.json() });

      // a closed session is not found either
      await s.send('24680');
      expect((await fetch(`${server.baseUrl}/api/ussd/debug/${s.sessionId}`, { headers: auth })).status).to.equal(404);
    } finally {
      await server.stop();
    }
  });
});

describe('USSD start-up and PIN key', () => {
  it('production refuses to start without PIN_ENCRYPTION_KEY, or with a bad one', async () => {
    const db = createDb({ url: 'sqlite::memory:', dataDir: '.', poolMax: 1 });
    await migrateLatest(db);
    try {
      const logger = createLogger(configWith());
      // With the configuration, before any database or file is made.
      expect(() => configWith({ NODE_ENV: 'production' })).to.throw(ConfigError, /^Invalid configuration:\n {2}PIN_ENCRYPTION_KEY: required in production/);
      // A malformed key is refused with the configuration, in any environment.
      expect(() => configWith({ NODE_ENV: 'production', PIN_ENCRYPTION_KEY: 'short' })).to.throw(ConfigError, /PIN_ENCRYPTION_KEY: must be an AES-256 key/);
      expect(() => configWith({ PIN_ENCRYPTION_KEY: 'short' })).to.throw(ConfigError, /PIN_ENCRYPTION_KEY/);
      const ok = await createHearth({ config: configWith({ NODE_ENV: 'production', PIN_ENCRYPTION_KEY: TEST_PIN_KEY }), db, logger });
      await ok.close();
    } finally {
      await db.destroy();
    }
  });

  it('the production config starts and listens with a valid key', async () => {
    const db = createDb({ url: 'sqlite::memory:', dataDir: '.', poolMax: 1 });
    await migrateLatest(db);
    const config = configWith({ NODE_ENV: 'production', PIN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') });
    const hearth = await createHearth({ config, db, logger: createLogger(config) });
    const running = await listen(hearth.app, 0, '127.0.0.1', 1000);
    await running.stop();
    await hearth.close();
    await db.destroy();
  });
});

forEachDatabase('USSD PIN key at start-up', (t) => {
  it('a key that does not open the stored PINs stops start-up, naming the variable; the key they were sealed with starts', async () => {
    const sealedWith = Buffer.alloc(32, 1);
    const inserted = await new UssdRepository(t.db).insertAccount({
      id: 'acc-pin-key',
      customerId: '48151623',
      phoneNumber: '+254700000042',
      name: 'Amina',
      village: null,
      testGroup: 'reference',
      sealedPin: new PinCipher(sealedWith).seal('24680'),
      createdAt: new Date().toISOString(),
      language: 'en',
    });
    expect(inserted).to.equal(true);
    const logger = createLogger(configWith({ LOG_LEVEL: 'silent' }));
    let error: unknown;
    await createHearth({ config: configWith({ PIN_ENCRYPTION_KEY: Buffer.alloc(32, 2).toString('hex') }), db: t.db, logger }).catch((e) => (error = e));
    expect(error).to.be.instanceOf(ConfigError);
    expect(String(error)).to.match(/PIN_ENCRYPTION_KEY: does not open the PINs already stored/);
    const ok = await createHearth({ config: configWith({ PIN_ENCRYPTION_KEY: sealedWith.toString('hex') }), db: t.db, logger });
    await ok.close();
  });
});
