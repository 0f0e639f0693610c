// What the telecom gateway tells besides the hops: the network of each session (networkCode)
// and Africa's Talking's end-of-session notification; and why a refused hop was refused, in
// the operator's log (never a PIN).
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { GatewaySession, postUssd, RecordingTwins, startUssdServer, type UssdTestServer } from './helpers.ts';

forEachDatabase('USSD gateway notifications and refusals', (t) => {
  let server: UssdTestServer;
  let logs = '';
  before(async () => {
    const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
    server = await startUssdServer(t.db, {}, { twins: new RecordingTwins(), logger });
  });
  after(() => server.stop());

  const notify = (body: Record<string, string>) =>
    fetch(`${server.baseUrl}/api/ussd/events`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body).toString(),
    });

  it("stores the session's networkCode, and records the end-of-session notification on the session", async () => {
    const s = new GatewaySession([server.baseUrl]);
    const dial = await postUssd(server.baseUrl, { sessionId: s.sessionId, serviceCode: s.serviceCode, phoneNumber: s.phoneNumber, text: '', networkCode: '63902' }, { form: true });
    expect(dial.text).to.match(/^CON Welcome/);
    const res = await notify({
      sessionId: s.sessionId, serviceCode: s.serviceCode, networkCode: '63902', phoneNumber: s.phoneNumber, status: 'Incomplete',
      durationInMillis: '24310', errorMessage: 'Session timed out on the handset', hopsCount: '3', cost: 'KES 0.0000',
      input: '2*1*24680', lastAppResponse: 'CON Welcome to Hearth', date: '2026-11-23 10:00:00.000',
    });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ sessionId: s.sessionId, recorded: true });
    const row = (await t.db('ussd_sessions').where('id', s.sessionId).first())!;
    expect(row).to.include({ network_code: '63902', end_status: 'Incomplete', end_error: 'Session timed out on the handset' });
    expect(Number(row.end_duration_ms)).to.equal(24310);
    expect(row.ended_at).to.equal(server.clock.now.toISOString());
    // what the household typed (a PIN) is neither stored nor logged
    expect(JSON.stringify(row)).to.not.include('24680');
    expect(logs).to.include('ussd session end notified');
    expect(logs).to.not.include('24680');
  });

  it('the notification closes the session: the network has ended it, so a later hop is not served in it and it leaves the active list', async () => {
    const s = new GatewaySession([server.baseUrl]);
    expect(await s.dial()).to.match(/^CON Welcome/);
    expect(await s.send('2')).to.match(/^CON Account Menu/);
    const active = async () => (await fetch(`${server.baseUrl}/metrics`).then((r) => r.text())).match(/^hearth_ussd_sessions_active (\d+)/m)?.[1];
    const before = Number(await active());
    expect((await notify({ sessionId: s.sessionId, status: 'Failed', errorMessage: 'User cancelled' })).status).to.equal(200);
    const row = (await t.db('ussd_sessions').where('id', s.sessionId).first())!;
    expect(row).to.include({ status: 'closed', end_status: 'Failed' });
    expect(await s.send('1')).to.equal(`END This session has ended. Please dial ${s.serviceCode} again.`);
    // A retry of the hop answered before the notification gets that answer again.
    expect(await postUssd(server.baseUrl, { sessionId: s.sessionId, serviceCode: s.serviceCode, phoneNumber: s.phoneNumber, text: '2' }).then((r) => r.text)).to.match(/^CON Account Menu/);
    expect(Number(await active())).to.equal(before - 1);
    // A notification naming another phone changes nothing, as a hop from another phone does not.
    const other = new GatewaySession([server.baseUrl]);
    expect(await other.dial()).to.match(/^CON Welcome/);
    const elsewhere = await notify({ sessionId: other.sessionId, status: 'Incomplete', phoneNumber: '+254799999999' });
    expect(elsewhere.status).to.equal(404);
    expect(await elsewhere.json()).to.deep.equal({ error: 'Session not found' });
    expect(await other.send('2')).to.match(/^CON Account Menu/);
    // A second notification is recorded, and the session stays closed.
    expect((await notify({ sessionId: s.sessionId, status: 'Success' })).status).to.equal(200);
    expect((await t.db('ussd_sessions').select('status').where('id', s.sessionId).first())!.status).to.equal('closed');
  });

  it('JSON works too; an unknown session is 404, a notification without status is 400', async () => {
    const s = new GatewaySession([server.baseUrl]);
    await s.dial();
    const json = await fetch(`${server.baseUrl}/api/ussd/events`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ sessionId: s.sessionId, status: 'Success', durationInMillis: 5000 }),
    });
    expect(json.status).to.equal(200);
    expect((await t.db('ussd_sessions').where('id', s.sessionId).first())!.end_status).to.equal('Success');
    const unknown = await notify({ sessionId: 'ATUid_never_seen', status: 'Success' });
    expect(unknown.status).to.equal(404);
    expect(await unknown.json()).to.deep.equal({ error: 'Session not found' });
    const invalid = await notify({ sessionId: s.sessionId });
    expect(invalid.status).to.equal(400);
    for (const durationInMillis of ['soon', '1000000000']) {
      expect((await notify({ sessionId: s.sessionId, status: 'Success', durationInMillis })).status, durationInMillis).to.equal(400);
    }
    // Refusals before the body is read are documented too.
    const plain = await fetch(`${server.baseUrl}/api/ussd/events`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'sessionId=x' });
    expect(plain.status).to.equal(415);
    expectContractResponse('POST', '/api/ussd/events', { status: 415, headers: plain.headers, body: await plain.json() });
    const big = await fetch(`${server.baseUrl}/api/ussd/events`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ sessionId: s.sessionId, status: 'Success', x: 'x'.repeat(200_000) }) });
    expect(big.status).to.equal(413);
    expectContractResponse('POST', '/api/ussd/events', { status: 413, headers: big.headers, body: await big.json() });
  });

  it('a refused hop logs the failing field and rule, never the value (a PIN in text)', async () => {
    logs = '';
    const phone = '+254799911122';
    const tooLong = `2*1*12345678*${'97531*'.repeat(30)}`;
    const hop = await postUssd(server.baseUrl, { sessionId: 'ATUid_refused', serviceCode: '*384*1234#', phoneNumber: phone, text: tooLong });
    expect(hop.text).to.equal('END Invalid input. Please try again.');
    const bad = await postUssd(server.baseUrl, { sessionId: 'ATUid_refused2', serviceCode: '*384*1234#', phoneNumber: '0799911122', text: '97531' });
    expect(bad.text).to.equal('END Invalid input. Please try again.');
    const entries = logs.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.msg === 'ussd request refused');
    expect(entries.map((e) => e.fields.map((f: { field: string }) => f.field))).to.deep.equal([['/body/text'], ['/body/phoneNumber']]);
    for (const e of entries) expect(e.fields[0].problem).to.be.a('string').and.not.equal('');
    expect(logs).to.not.include('97531');
    expect(logs).to.not.include('0799911122');
    // a session's id used from another phone names the field too
    const s = new GatewaySession([server.baseUrl]);
    await s.dial();
    logs = '';
    const hijack = await postUssd(server.baseUrl, { sessionId: s.sessionId, serviceCode: s.serviceCode, phoneNumber: '+254700000123', text: '1' });
    expect(hijack.text).to.equal('END Invalid input. Please try again.');
    expect(JSON.parse(logs.trim().split('\n').find((l) => l.includes('ussd request refused'))!).fields).to.deep.equal([
      { field: '/body/phoneNumber', problem: "is not the session's" },
    ]);
  });
});
