import { expect } from 'chai';
import { AppError } from '../../src/platform/http/errors.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createAccount, GatewaySession, login, logFuelDays, RecordingTwins, startUssdServer, type UssdTestServer } from './helpers.ts';

forEachDatabase('USSD services and PINs', (t) => {
  let server: UssdTestServer;
  let twins: RecordingTwins;
  before(async () => {
    twins = new RecordingTwins(t.db);
    server = await startUssdServer(t.db, {}, { twins });
  });
  after(() => server.stop());
  const session = (phone?: string) => new GatewaySession([server.baseUrl], phone);

  it('three wrong PINs lock the account across three sessions; the right PIN is then refused', async () => {
    const s = session();
    const id = await createAccount(s, '86420');
    const first = session(s.phoneNumber);
    expect(await login(first, id, '11112')).to.match(/^CON Wrong PIN\. 2 attempts left\./);
    expect(await first.send('*')).to.match(/^CON Welcome/);
    const second = session(s.phoneNumber);
    expect(await login(second, id, '11113')).to.match(/^CON Wrong PIN\. 1 attempt left\./);
    const third = session(s.phoneNumber);
    expect(await login(third, id, '11114')).to.match(/^END Your account is locked after 3 wrong PINs/);
    const fourth = session(s.phoneNumber);
    expect(await login(fourth, id, '86420')).to.match(/^END Your account is locked/);
    const row = await t.db('ussd_accounts').where({ customer_id: id }).first();
    expect(row.failed_pin_attempts).to.equal(3);
    expect(row.locked_at).to.be.a('string');
  });

  it('a correct PIN resets the failed-attempt counter', async () => {
    const s = session();
    const id = await createAccount(s, '86421');
    expect(await login(session(s.phoneNumber), id, '11112')).to.match(/^CON Wrong PIN/);
    expect(await login(session(s.phoneNumber), id, '86421')).to.match(/^CON Welcome, Jane/);
    expect((await t.db('ussd_accounts').where({ customer_id: id }).first()).failed_pin_attempts).to.equal(0);
  });

  describe('forgot Customer ID', () => {
    const recover = async (phone: string, pin: string) => {
      const r = session(phone);
      await r.dial();
      expect(await r.walk('2', '3')).to.equal('CON Enter your 5-digit PIN to see your Customer ID\n0. Back');
      return r.send(pin);
    };

    it("shows the phone's own Customer ID after its PIN, which then logs in", async () => {
      const s = session();
      const id = await createAccount(s, '75319');
      expect(await recover(s.phoneNumber, '75319')).to.equal(`END Your Customer ID is ${id}. Keep it and your PIN safe.`);
      expect(await login(session(s.phoneNumber), id, '75319')).to.match(/^CON Welcome, Jane/);
    });

    it('a wrong PIN counts towards the same lock as a login; the third locks the account', async () => {
      const s = session();
      const id = await createAccount(s, '75318');
      const r = session(s.phoneNumber);
      await r.dial();
      await r.walk('2', '3');
      expect(await r.send('11112')).to.equal('CON Wrong PIN. 2 attempts left.\nEnter your 5-digit PIN to see your Customer ID\n0. Back');
      expect(await r.send('123')).to.equal('CON PIN must be 5 digits.\nEnter your 5-digit PIN to see your Customer ID\n0. Back');
      expect(await login(session(s.phoneNumber), id, '11113')).to.match(/^CON Wrong PIN\. 1 attempt left\./);
      expect(await r.send('11114')).to.match(/^END Your account is locked after 3 wrong PINs/);
      expect(await recover(s.phoneNumber, '75318'), 'the right PIN once locked').to.match(/^END Your account is locked/);
      expect((await t.db('ussd_accounts').where({ customer_id: id }).first()).failed_pin_attempts).to.equal(3);
    });

    it('a phone without an account is told so, back on the Account Menu', async () => {
      const reply = await recover(session().phoneNumber, '75317');
      expect(reply).to.equal('CON No account for this phone number.\nAccount Menu\n1. Log in\n2. Create account\n3. Forgot Customer ID\n0. Back');
    });
  });

  it('fuel logged over 3 days, reviewed, then submitted as a KPT claim; status shown after', async () => {
    const s = session();
    const id = await createAccount(s, '13579');
    const needs = session(s.phoneNumber);
    await login(needs, id, '13579');
    expect(await needs.walk('1', '2.5')).to.match(/^CON Saved 2\.5 kg for 2026-03-02\.\nServices/);
    expect(await needs.send('3')).to.match(/^CON A claim needs at least 3 days logged in a row, not yet claimed \(you have 1\)\.\nServices/);
    expect(await needs.walk('1', 'abc')).to.match(/^CON Enter a positive number of kg/);
    expect(await needs.send('-1')).to.match(/^CON Enter a positive number of kg/);
    expect(await needs.send('0.0')).to.match(/^CON Enter a positive number of kg/);
    expect(await needs.send('0')).to.match(/^CON Services/);
    // same day again replaces the reading
    expect(await needs.walk('1', '2,75')).to.match(/^CON Updated 2026-03-02 to 2.75 kg\./);

    for (const [day, kg] of [['2026-03-03', '3'], ['2026-03-04', '2.25']] as const) {
      server.clock.now = new Date(`${day}T09:00:00Z`);
      const d = session(s.phoneNumber);
      await login(d, id, '13579');
      expect(await d.walk('1', kg)).to.include(`for ${day}.`);
    }
    const r = session(s.phoneNumber);
    await login(r, id, '13579');
    expect(await r.send('2')).to.equal('CON Logged days: 3, total 8 kg\n2026-03-02: 2.75 kg\n2026-03-03: 3 kg\n2026-03-04: 2.25 kg\n0. Back');
    expect(await r.send('0')).to.match(/^CON Services/);
    expect(await r.send('4')).to.equal('CON No claim submitted yet.\n0. Back');
    expect(await r.send('0')).to.match(/^CON Services/);
    expect(await r.send('3')).to.equal('CON Submit KPT claim for 3 days, total 8 kg?\n1. Submit\n0. Back');
    expect(await r.send('1')).to.equal('CON Season during the test?\n1. Dry\n2. Rainy\n3. Cold\n0. Back');
    expect(await r.send('5')).to.match(/^CON Invalid choice\. Try again\.\nSeason/);
    expect(await r.send('2')).to.match(/^CON Any special event during the test\?\n1\. None/);
    expect(await r.send('0')).to.match(/^CON Season during the test/);
    await r.send('2');
    expect(await r.send('1')).to.match(/^CON Main work of the household\?\n1\. Farming/);
    const end = await r.send('1');
    expect(end).to.match(/^END Claim submitted\. Reference clm_\d+\. Status: verified\.$/);
    const claim = twins.claims.at(-1)!;
    expect(claim.dailyLogs).to.deep.equal([2.75, 3, 2.25]);
    expect(claim.total).to.equal(8);
    expect(claim.externalFactors).to.deep.equal({ season: 'rainy', culturalEvents: ['none'], occupationalFactors: ['farming'] });
    expect([claim.startDate, claim.endDate]).to.deep.equal(['2026-03-02', '2026-03-04']);
    const household = await t.db('ussd_accounts').where({ customer_id: id }).first();
    expect(claim.householdDid).to.equal(household.household_did);

    const st = session(s.phoneNumber);
    await login(st, id, '13579');
    expect(await st.send('4')).to.equal(`CON Claim ${claim.id}: verified\n0. Back`);
    // the claimed days are marked; logging a claimed day again changes nothing
    const marked = await t.db('ussd_fuel_logs').where({ account_id: household.id }).orderBy('log_date');
    expect(marked.map((l: { claim_id: string }) => l.claim_id)).to.deep.equal([claim.id, claim.id, claim.id]);
    await st.walk('0', '1');
    expect(await st.send('9')).to.match(/^CON 2026-03-04 is already in a submitted claim; not changed\.\nServices/);
    expect(await st.send('3')).to.match(/^CON A claim needs at least 3 days logged in a row, not yet claimed \(you have 0\)\./);
  });

  it('claim status and the submitted screen show the first reason of a rejected or pending claim, within 182 characters', async () => {
    const s = session();
    const id = await createAccount(s, '13571');
    const reason = 'testPeriod.durationDays does not match the number of daily logs and the period, which is a very long explanation indeed for a USSD screen, longer than any screen of a feature phone could show';
    const rejecting = Object.assign(new RecordingTwins(t.db), {
      async submitKptClaim(input: Parameters<RecordingTwins['submitKptClaim']>[0]) {
        const claim = { ...input, id: 'clm_r1', status: 'rejected', reason };
        rejecting.claims.push(claim);
        return claim;
      },
    });
    const other = await startUssdServer(t.db, {}, { clock: server.clock, twins: rejecting });
    try {
      await logFuelDays(other, s.phoneNumber, id, '13571', ['2026-08-01', '2026-08-02', '2026-08-03']);
      const d = new GatewaySession([other.baseUrl], s.phoneNumber);
      await login(d, id, '13571');
      const end = await d.walk('3', '1', '1', '1', '1');
      expect(end).to.match(/^END Claim submitted\. Reference clm_r1\. Status: rejected\. testPeriod\.durationDays does not match .*\.\.\.$/);
      expect(end.length).to.be.at.most(182);
      const st = new GatewaySession([other.baseUrl], s.phoneNumber);
      await login(st, id, '13571');
      const status = await st.send('4');
      expect(status).to.match(/^CON Claim clm_r1: rejected testPeriod\.durationDays does not match .*\.\.\.\n0\. Back$/);
      expect(status.length).to.be.at.most(182);
    } finally {
      await other.stop();
    }
  });

  it("today's fuel is logged for the local date of USSD_TIMEZONE, just after local midnight", async () => {
    // 21:30 UTC on 2 March is 00:30 on 3 March in Nairobi (UTC+3)
    const clock = { now: new Date('2026-03-02T21:30:00Z') };
    const local = await startUssdServer(t.db, { USSD_TIMEZONE: 'Africa/Nairobi' }, { twins, clock });
    try {
      const s = new GatewaySession([local.baseUrl]);
      const id = await createAccount(s, '31337');
      const l = new GatewaySession([local.baseUrl], s.phoneNumber);
      await login(l, id, '31337');
      expect(await l.walk('1', '1.5')).to.match(/^CON Saved 1\.5 kg for 2026-03-03\./);
      const account = await t.db('ussd_accounts').where({ customer_id: id }).first();
      expect((await t.db('ussd_fuel_logs').where({ account_id: account.id })).map((r: { log_date: string }) => r.log_date)).to.deep.equal(['2026-03-03']);
    } finally {
      await local.stop();
    }
  });

  for (const [title, detail, shown] of [
    ['is explained on the Services menu', 'overlapping measurements for this household', 'overlapping measurements for this household'],
    ['with a long reason shows it cut visibly', `overlapping measurements ${'x'.repeat(100)}`, `overlapping measurements ${'x'.repeat(62)}...`],
  ] as const) {
    it(`a claim rejected by the claim service ${title}`, async () => {
      const s = session();
      const id = await createAccount(s, '13570');
      const rejecting = new RecordingTwins(t.db);
      const other = await startUssdServer(t.db, {}, {
        clock: server.clock,
        twins: Object.assign(rejecting, {
          submitKptClaim: async () => {
            throw new AppError(409, 'Conflict', { detail });
          },
        }),
      });
      try {
        await logFuelDays(other, s.phoneNumber, id, '13570', ['2026-04-01', '2026-04-02', '2026-04-03']);
        const d = new GatewaySession([other.baseUrl], s.phoneNumber);
        await login(d, id, '13570');
        await d.walk('3', '1', '1', '1');
        const reply = await d.send('1');
        expect(reply.startsWith(`CON Claim not accepted: ${shown}\nServices`), reply).to.equal(true);
      } finally {
        await other.stop();
      }
    });
  }

  it('change PIN: current PIN checked, new PIN rules, confirmation; the new PIN then logs in', async () => {
    const s = session();
    const id = await createAccount(s, '50505');
    const c = session(s.phoneNumber);
    await login(c, id, '50505');
    expect(await c.send('5')).to.equal('CON Enter your current PIN\n0. Back');
    expect(await c.send('11112')).to.match(/^CON Wrong PIN\. 2 attempts left\.\nEnter your current PIN/);
    expect(await c.send('50505')).to.equal('CON Enter a new 5-digit PIN\n0. Back');
    expect(await c.send('98765')).to.match(/^CON PIN too easy/);
    expect(await c.send('70717')).to.equal('CON Enter the new PIN again\n0. Back');
    expect(await c.send('70718')).to.match(/^CON PINs did not match/);
    await c.send('70717');
    expect(await c.send('70717')).to.match(/^CON PIN changed\.\nServices/);
    expect(await login(session(s.phoneNumber), id, '50505')).to.match(/^CON Wrong PIN/);
    expect(await login(session(s.phoneNumber), id, '70717')).to.match(/^CON Welcome, Jane/);
  });

  it('a retried POST gets the stored reply and applies nothing twice', async () => {
    const s = session();
    const id = await createAccount(s, '62626');
    server.clock.now = new Date('2026-05-01T09:00:00Z');
    const r = session(s.phoneNumber);
    await login(r, id, '62626');
    await r.send('1');
    const saved = await r.send('4');
    expect(saved).to.match(/^CON Saved 4 kg/);
    expect(await r.retry()).to.equal(saved);
    // a retried wrong PIN counts once
    const w = session(s.phoneNumber);
    const wrong = await login(w, id, '11112');
    expect(await w.retry()).to.equal(wrong);
    const row = await t.db('ussd_accounts').where({ customer_id: id }).first();
    expect(row.failed_pin_attempts).to.equal(1);
    const logs = await t.db('ussd_fuel_logs').where({ account_id: row.id });
    expect(logs).to.have.length(1);
  });

  it('the plain PIN is never stored: sessions and accounts hold only AES-GCM ciphertext', async () => {
    const s = session();
    await s.dial();
    await s.walk('2', '2', 'Jane Doe', '00', '2', '31415');
    const row = await t.db('ussd_sessions').where({ id: s.sessionId }).first();
    expect(row.snapshot).to.not.include('31415');
    expect(JSON.parse(row.snapshot).context.draft.sealedPin).to.match(/^v1\./);
    await s.send('31415');
    const all = JSON.stringify(await t.db('ussd_accounts').select());
    expect(all).to.not.include('31415');
  });

  it('no PIN in any column of any ussd table after creating an account, logging in and changing the PIN', async () => {
    const pins = ['27183', '16180', '14142'] as const;
    const s = session();
    const id = await createAccount(s, pins[0]);
    const l = session(s.phoneNumber);
    await login(l, id, pins[1]);
    await l.send(pins[0]);
    expect(await l.walk('5', pins[0], pins[2])).to.match(/^CON Enter the new PIN again/);
    expect(await l.send(pins[2])).to.match(/^CON PIN changed/);
    // the gateway's cumulative text holds every PIN typed: the session keeps no form of it
    expect(l.text).to.include(pins[0]);
    // This test's rows only, with what is random taken out, as it could hold a PIN's five digits
    // by chance: the Customer ID, AES-GCM sealed PINs (base64url) and the keyed text digest (hex).
    const plain = (v: unknown) =>
      String(v).replaceAll(id, '<customer id>').replace(/v1\.[\w-]+\.[\w-]+\.[\w-]+/g, '<sealed>').replace(/\b[0-9a-f]{64}\b/g, '<digest>');
    const account = await t.db('ussd_accounts').where({ phone_number: s.phoneNumber }).first();
    const rowsOf: Record<string, unknown[]> = {
      ussd_sessions: await t.db('ussd_sessions').where({ phone_number: s.phoneNumber }),
      ussd_accounts: [account],
      ussd_fuel_logs: await t.db('ussd_fuel_logs').where({ account_id: account.id }),
    };
    expect(rowsOf.ussd_sessions).to.have.length.at.least(2);
    for (const [table, rows] of Object.entries(rowsOf)) {
      for (const row of rows as Record<string, unknown>[]) {
        for (const [column, value] of Object.entries(row)) {
          for (const pin of pins) expect(plain(value), `${table}.${column}`).to.not.include(pin);
        }
      }
    }
    const session_ = await t.db('ussd_sessions').where({ id: l.sessionId }).first();
    expect(session_.last_text_length).to.equal(l.text.length);
    expect(session_.last_text_digest).to.match(/^[0-9a-f]{64}$/);
    // and the stored digest still recognises a retry and the next hop
    expect(await l.retry()).to.match(/^CON PIN changed/);
    expect(await l.send('0')).to.match(/^CON Welcome to Hearth/);
  });
});
