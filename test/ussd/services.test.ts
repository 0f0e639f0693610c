import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { DomainError } from '../../src/platform/domain-errors.ts';
import { ussdClaimForRef } from '../../src/ussd/index.ts';
import { claimRef } from '../../src/ussd/claims.ts';
import { asClaimRefusal } from '../../src/ussd/twins-adapter.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createAccount, GatewaySession, login, logFuelDays, RecordingTwins, startUssdServer, type UssdTestServer } from './helpers.ts';

forEachDatabase('USSD services and PINs', (t) => {
  let server: UssdTestServer;
  let twins: RecordingTwins;
  before(async () => {
    twins = new RecordingTwins();
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
    const row = (await t.db('ussd_accounts').where('customer_id', id).first())!;
    expect(row.failed_pin_attempts).to.equal(3);
    expect(row.locked_at).to.be.a('string');
  });

  it('in Kiswahili the attempts left agree in number: majaribio 2 yamebaki, jaribio 1 limebaki', async () => {
    const s = session();
    const id = await createAccount(s, '86422');
    const inSwahili = async (pin: string) => {
      const c = session(s.phoneNumber);
      await c.dial();
      await c.walk('9', '2');
      return c.walk('2', '1', id, pin);
    };
    expect(await inSwahili('11112')).to.match(/^CON PIN si sahihi\. Majaribio 2 yamebaki\.\n/);
    expect(await inSwahili('11113')).to.match(/^CON PIN si sahihi\. Jaribio 1 limebaki\.\n/);
  });

  it('a correct PIN resets the failed-attempt counter', async () => {
    const s = session();
    const id = await createAccount(s, '86421');
    expect(await login(session(s.phoneNumber), id, '11112')).to.match(/^CON Wrong PIN/);
    expect(await login(session(s.phoneNumber), id, '86421')).to.match(/^CON Welcome, Jane/);
    expect((await t.db('ussd_accounts').where('customer_id', id).first())!.failed_pin_attempts).to.equal(0);
  });

  it('a correct PIN while every attempt left is being checked elsewhere is asked again, never told the account is locked', async () => {
    const s = session();
    const id = await createAccount(s, '86423');
    // Three attempts counted just now by other sessions, not settled yet.
    await t.db('ussd_accounts').update({ failed_pin_attempts: 3, updated_at: server.clock.now.toISOString() }).where('customer_id', id);
    const busy = session(s.phoneNumber);
    expect(await login(busy, id, '86423')).to.equal('CON Please try again in a moment.\nEnter your 5-digit PIN\n0. Back');
    // Counted long ago and never settled (an instance died before the lock): the account locks.
    await t.db('ussd_accounts').update({ updated_at: new Date(server.clock.now.getTime() - 60_000).toISOString() }).where('customer_id', id);
    expect(await busy.send('86423')).to.match(/^END Your account is locked/);
    expect((await t.db('ussd_accounts').select('locked_at').where('customer_id', id).first())!.locked_at).to.be.a('string');
  });

  it('concurrent logins with the correct PIN all log in or are asked again; none is told the account is locked', async () => {
    const s = session();
    const id = await createAccount(s, '86424');
    const replies = await Promise.all(Array.from({ length: 8 }, () => login(session(s.phoneNumber), id, '86424')));
    for (const reply of replies) expect(reply).to.match(/^CON (Welcome, Jane|Please try again in a moment\.)/);
    expect(replies.some((r) => r.startsWith('CON Welcome'))).to.equal(true);
    expect((await t.db('ussd_accounts').select('locked_at').where('customer_id', id).first())!.locked_at).to.equal(null);
  });

  describe('forgot Customer ID', () => {
    const recover = async (phone: string, pin: string) => {
      const r = session(phone);
      await r.dial();
      expect(await r.walk('2', '3')).to.equal('CON Enter your 5-digit PIN to see your Customer ID\n0. Back');
      return r.send(pin);
    };

    // The session goes on to log in: it used to END on the Customer ID, a paid redial to use it.
    it("shows the phone's own Customer ID after its PIN and offers to log in, without the PIN again", async () => {
      const s = session();
      const id = await createAccount(s, '75319');
      const r = session(s.phoneNumber);
      await r.dial();
      await r.walk('2', '3');
      expect(await r.send('75319')).to.equal(`CON Your Customer ID is ${id}. Keep it and your PIN safe.\n1. Log in\n0. Back`);
      expect(await r.send('7')).to.equal(`CON Invalid choice. Try again.\nYour Customer ID is ${id}. Keep it and your PIN safe.\n1. Log in\n0. Back`);
      expect(await r.send('1')).to.equal('CON Services\n1. Log fuel used\n2. Review logged days\n3. Send claim\n4. Claim status\n5. Change PIN\n0. Back');
      expect(await r.walk('1', '1', '2')).to.match(/^CON Saved 2 kg for today\./);
      expect(await r.send('*')).to.match(/\n3\. Services\n/);
      // The ID also logs in as usual.
      expect(await login(session(s.phoneNumber), id, '75319')).to.match(/^CON Welcome, Jane/);
    });

    it('in Kiswahili: the Customer ID, then Ingia; back leads to the Account Menu, not logged in', async () => {
      const s = session();
      const id = await createAccount(s, '75317');
      const r = session(s.phoneNumber);
      await r.dial();
      await r.walk('9', '2', '2', '3');
      const shown = await r.send('75317');
      expect(shown).to.match(new RegExp(`^CON Nambari yako ya mteja ni ${id}\\. .+\\n1\\. Ingia\\n0\\. Rudi$`));
      expect(await r.send('0')).to.match(/^CON Akaunti\n1\. Ingia\n/);
      expect(await r.send('0')).to.equal('CON Karibu Hearth\n1. Jifunze Zaidi\n2. Akaunti\n9. Lugha / Language\n*. Toka');
      await r.walk('2', '3', '75317');
      expect(await r.send('1')).to.match(/^CON Huduma\n1\. Rekodi kuni au mkaa\n/);
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
      expect((await t.db('ussd_accounts').where('customer_id', id).first())!.failed_pin_attempts).to.equal(3);
    });

    it('a phone without an account is told so before its PIN is asked for, back on the Account Menu', async () => {
      const r = session();
      await r.dial();
      expect(await r.walk('2', '3')).to.equal('CON No account for this phone number.\nAccount Menu\n1. Log in\n2. Create account\n3. Forgot Customer ID\n0. Back');
    });
  });

  it('a day chosen before midnight keeps its date when the kg comes after it', async () => {
    const s = session();
    const id = await createAccount(s, '13579');
    server.clock.now = new Date('2026-05-10T23:59:40Z');
    const today = session(s.phoneNumber);
    await login(today, id, '13579');
    expect(await today.walk('1', '1')).to.match(/^CON Enter kg of fuel used today/);
    const yesterday = session(s.phoneNumber);
    await login(yesterday, id, '13579');
    expect(await yesterday.walk('1', '2')).to.match(/^CON Enter kg of fuel used yesterday/);
    server.clock.now = new Date('2026-05-11T00:00:10Z');
    expect(await today.send('2')).to.match(/^CON Saved 2 kg for today\./);
    expect(await yesterday.send('3')).to.match(/^CON Saved 3 kg for yesterday\./);
    const account = (await t.db('ussd_accounts').select('id').where('customer_id', id).first())!;
    const logs = await t.db('ussd_fuel_logs').select(['log_date', 'kg']).where('account_id', account.id).orderBy('log_date');
    expect(logs.map((l) => [l.log_date, Number(l.kg)])).to.deep.equal([['2026-05-09', 3], ['2026-05-10', 2]]);
  });

  it('a claim short of days names the day still to log (yesterday, between two logged days), in the household\'s language', async () => {
    const s = session();
    const id = await createAccount(s, '13579');
    server.clock.now = new Date('2026-06-10T09:00:00Z');
    const d = session(s.phoneNumber);
    await login(d, id, '13579');
    // Nothing logged: every day is named, without "too" (it asked to log three days "too").
    expect(await d.send('3')).to.match(/^CON A claim needs 3 days in a row\. Log the day before yesterday, yesterday and today, then send\.\nServices/);
    expect(await d.walk('1', '1', '2')).to.match(/^CON Saved 2 kg for today\./);
    expect(await d.walk('1', '3', '2')).to.match(/^CON Saved 2 kg for the day before yesterday\./);
    expect(await d.send('3')).to.match(/^CON A claim needs 3 days in a row\. Log yesterday too, then send\.\nServices/);
    await d.walk('0', '9');
    expect(await d.send('2')).to.match(/^CON Lugha: Kiswahili\./);
    const k = session(s.phoneNumber);
    await login(k, id, '13579');
    expect(await k.send('3')).to.match(/^CON Ripoti inahitaji siku 3 mfululizo\. Weka kilo za jana pia, kisha tuma\.\n/);
    expect(await k.walk('1', '2', '2')).to.match(/^CON /);
    expect(await k.send('3')).to.match(/^CON Tuma ripoti ya siku 3/);
  });

  it('fuel logged for today, yesterday and the day before, reviewed, then sent as a claim; status shown after', async () => {
    const s = session();
    const id = await createAccount(s, '13579');
    server.clock.now = new Date('2026-03-04T09:00:00Z');
    const d = session(s.phoneNumber);
    await login(d, id, '13579');
    expect(await d.send('1')).to.equal('CON Fuel used on which day?\n1. Today\n2. Yesterday\n3. The day before yesterday\n0. Back');
    expect(await d.send('4')).to.match(/^CON Invalid choice\. Try again\.\nFuel used on which day\?/);
    expect(await d.send('3')).to.equal('CON Enter kg of fuel used the day before yesterday (e.g. 2.5)\n0. Back');
    expect(await d.send('2.5')).to.match(/^CON Saved 2\.5 kg for the day before yesterday\.\nServices/);
    expect(await d.send('3')).to.match(/^CON A claim needs 3 days in a row\. Log yesterday and today too, then send\.\nServices/);
    expect(await d.walk('1', '2', 'abc')).to.match(/^CON Enter kg as a number up to 1000, e\.g\. 2\.5\nEnter kg of fuel used yesterday/);
    expect(await d.send('-1')).to.match(/^CON Enter kg as a number up to 1000/);
    expect(await d.send('0.0')).to.match(/^CON Enter kg as a number up to 1000/);
    // More than a claim may hold for a day (the contract's bound) is refused when typed.
    expect(await d.send('1000.001')).to.match(/^CON Enter kg as a number up to 1000/);
    expect(await d.send('5000')).to.match(/^CON Enter kg as a number up to 1000/);
    expect(await d.send('3')).to.match(/^CON Saved 3 kg for yesterday\./);
    // the same day again replaces the reading
    expect(await d.walk('1', '3', '2,75')).to.match(/^CON Changed the day before yesterday to 2\.75 kg\./);
    // Half a kilo typed without its leading 0, as many do.
    expect(await d.walk('1', '3', '.75')).to.match(/^CON Changed the day before yesterday to 0\.75 kg\./);
    expect(await d.walk('1', '3', '2,75')).to.match(/^CON Changed the day before yesterday to 2\.75 kg\./);
    expect(await d.walk('1', '1', '2.25')).to.match(/^CON Saved 2\.25 kg for today\./);

    const r = session(s.phoneNumber);
    await login(r, id, '13579');
    expect(await r.send('2')).to.equal('CON Logged: 3 days, total 8 kg\n2 March: 2.75 kg\n3 March: 3 kg\n4 March: 2.25 kg\n0. Back');
    expect(await r.send('0')).to.match(/^CON Services/);
    expect(await r.send('4')).to.equal('CON No claim sent yet.\n0. Back');
    expect(await r.send('0')).to.match(/^CON Services/);
    expect(await r.send('3')).to.equal('CON Send a claim for 3 days, total 8 kg?\n1. Send\n0. Back');
    expect(await r.send('1')).to.equal('CON Which season is it?\n1. Dry\n2. Rainy\n3. Cold\n0. Back');
    expect(await r.send('5')).to.match(/^CON Invalid choice\. Try again\.\nWhich season/);
    expect(await r.send('2')).to.match(/^CON Any special event on these days\?\n1\. None/);
    expect(await r.send('0')).to.match(/^CON Which season is it/);
    await r.send('2');
    expect(await r.send('1')).to.match(/^CON Main work of your home\?\n1\. Farming/);
    const end = await r.send('1');
    const claim = twins.claims.at(-1)!;
    const ref = claimRef(claim.id);
    expect(ref).to.match(/^[A-Z0-9]{8}$/);
    expect(end).to.equal(`END Claim sent. Reference ${ref}. Status: Accepted.`);
    expect(claim.dailyLogs).to.deep.equal([2.75, 3, 2.25]);
    expect(claim.total).to.equal(8);
    expect(claim.externalFactors).to.deep.equal({ season: 'rainy', culturalEvents: ['none'], occupationalFactors: ['farming'] });
    expect([claim.startDate, claim.endDate]).to.deep.equal(['2026-03-02', '2026-03-04']);
    const household = (await t.db('ussd_accounts').where('customer_id', id).first())!;
    expect(claim.householdDid).to.equal(household.household_did);
    // the reference leads an operator to the claim (as read out: any case, spaces)
    expect(await t.db('ussd_claim_refs').where('ref', ref).first()).to.include({ claim_id: claim.id, account_id: household.id });
    expect(await ussdClaimForRef(t.db, `${ref.slice(0, 4).toLowerCase()} ${ref.slice(4)}`)).to.equal(claim.id);
    expect(await ussdClaimForRef(t.db, 'AAAAAAAA')).to.equal(undefined);

    const st = session(s.phoneNumber);
    await login(st, id, '13579');
    expect(await st.send('4')).to.equal(`CON Claim ${ref}: Accepted.\n0. Back`);
    // the claimed days are marked; a claimed day is refused when chosen, before its kg is asked for
    const marked = await t.db('ussd_fuel_logs').where('account_id', household.id).orderBy('log_date');
    expect(marked.map((l) => l.claim_id)).to.deep.equal([claim.id, claim.id, claim.id]);
    await st.walk('0', '1');
    expect(await st.send('2')).to.equal('CON Yesterday is already in a claim you sent. Choose another day.\nFuel used on which day?\n1. Today\n2. Yesterday\n3. The day before yesterday\n0. Back');
    expect(await st.send('0')).to.match(/^CON Services/);
    // After a claim of the last three days, the next step: it said "You have 0 in a row."
    expect(await st.send('3')).to.match(/^CON A new claim needs 3 days in a row not yet sent\. Log each of the next 3 days, starting tomorrow, then send\.\nServices\n/);
    await st.walk('*', '9', '2', '3');
    expect(await st.send('3')).to.match(/^CON Ripoti mpya inahitaji siku 3 mfululizo ambazo hazijatumwa\. Weka kilo za siku 3 zijazo, kuanzia kesho, kisha tuma\.\nHuduma\n/);
  });

  it("days are the local dates of USSD_TIMEZONE, just after local midnight", async () => {
    // 21:30 UTC on 2 March is 00:30 on 3 March in Nairobi (UTC+3)
    const clock = { now: new Date('2026-03-02T21:30:00Z') };
    const local = await startUssdServer(t.db, { USSD_TIMEZONE: 'Africa/Nairobi' }, { twins, clock });
    try {
      const s = new GatewaySession([local.baseUrl]);
      const id = await createAccount(s, '31337');
      const l = new GatewaySession([local.baseUrl], s.phoneNumber);
      await login(l, id, '31337');
      expect(await l.walk('1', '1', '1.5')).to.match(/^CON Saved 1\.5 kg for today\./);
      expect(await l.walk('1', '2', '2')).to.match(/^CON Saved 2 kg for yesterday\./);
      const account = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      const days = await t.db('ussd_fuel_logs').where('account_id', account.id).orderBy('log_date');
      expect(days.map((r: { log_date: string }) => r.log_date)).to.deep.equal(['2026-03-02', '2026-03-03']);
    } finally {
      await local.stop();
    }
  });

  it('an amount outside USSD_FUEL_KG_MIN..MAX is saved only once confirmed', async () => {
    const s = session();
    const id = await createAccount(s, '13573');
    const d = session(s.phoneNumber);
    await login(d, id, '13573');
    expect(await d.walk('1', '1', '500')).to.equal(
      'CON You entered 500 kg for today. That is more than most homes use. Is it right?\n1. Yes, save it\n2. No, enter again\n0. Back',
    );
    const account = (await t.db('ussd_accounts').where('customer_id', id).first())!;
    expect(await t.db('ussd_fuel_logs').where('account_id', account.id)).to.have.length(0);
    expect(await d.send('2')).to.equal('CON Enter kg of fuel used today (e.g. 2.5)\n0. Back');
    expect(await d.send('0.1')).to.match(/^CON You entered 0\.1 kg for today\. That is less than most homes use\. Is it right\?\n/);
    expect(await d.send('1')).to.match(/^CON Saved 0\.1 kg for today\./);
    expect((await t.db('ussd_fuel_logs').where('account_id', account.id)).map((l: { kg: number }) => Number(l.kg))).to.deep.equal([0.1]);
    // the bounds themselves, and anything between, are saved straight away
    expect(await d.walk('1', '1', '30')).to.match(/^CON Changed today to 30 kg\./);
    expect(await d.walk('1', '1', '0.2')).to.match(/^CON Changed today to 0\.2 kg\./);
    const wide = await startUssdServer(t.db, { USSD_FUEL_KG_MAX: '800' }, { twins, clock: server.clock });
    try {
      const w = new GatewaySession([wide.baseUrl], s.phoneNumber);
      await login(w, id, '13573');
      expect(await w.walk('1', '1', '700')).to.match(/^CON Changed today to 700 kg\./);
    } finally {
      await wide.stop();
    }
  });

  it('a claim not accepted shows a plain reason, and its days are free to send again', async () => {
    const s = session();
    const id = await createAccount(s, '13571');
    const rejecting: RecordingTwins = new RecordingTwins((claim) => ({ ...claim, id: `clm_r${rejecting.claims.length + 1}`, status: 'rejected', reasonRule: 'random-selection-verified' }));
    const other = await startUssdServer(t.db, {}, { clock: server.clock, twins: rejecting });
    try {
      await logFuelDays(other, s.phoneNumber, id, '13571', ['2026-08-01', '2026-08-02', '2026-08-03']);
      const d = new GatewaySession([other.baseUrl], s.phoneNumber);
      await login(d, id, '13571');
      const end = await d.walk('3', '1', '1', '1', '1');
      expect(end).to.equal(`END Claim sent. Reference ${claimRef('clm_r1')}. Status: Not accepted. The programme cannot check claims yet. Your days are kept; send again later.`);
      const account = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      const logs = await t.db('ussd_fuel_logs').where('account_id', account.id);
      expect(logs.map((l: { claim_id: string | null }) => l.claim_id)).to.deep.equal([null, null, null]);
      const st = new GatewaySession([other.baseUrl], s.phoneNumber);
      await login(st, id, '13571');
      expect(await st.send('4')).to.equal(
        `CON Claim ${claimRef('clm_r1')}: Not accepted. The programme cannot check claims yet. Your days are kept; send again later.\n0. Back`,
      );
      // the days can be sent again
      expect(await st.walk('0', '3')).to.match(/^CON Send a claim for 3 days/);
    } finally {
      await other.stop();
    }
  });

  for (const [title, errors, shown] of [
    ['days in another claim', [{ path: ['testPeriod'], message: 'claim kpt_1 already covers 2026-04-01..2026-04-03', rule: 'no-overlapping-claim' }], 'Some of these days are already in another claim.'],
    ['a missing collection', [{ path: ['collectionId'], message: 'names no collection (create it with POST /v1/collections)', rule: 'collection-exists' }], 'The programme cannot check claims yet. Your days are kept; send again later.'],
    ['an unknown cause', undefined, 'Your claim could not be accepted. Ask your field agent.'],
  ] as const) {
    it(`a claim the claim service refuses (${title}) is explained in plain words; the operator detail is logged`, async () => {
      const s = session();
      const id = await createAccount(s, '13570');
      const rejecting = new RecordingTwins();
      let logs = '';
      const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
      const other = await startUssdServer(t.db, {}, {
        clock: server.clock,
        logger,
        twins: Object.assign(rejecting, {
          prepareClaim: async () => {
            // What the adapter makes of area A's refusal.
            throw asClaimRefusal(new DomainError('conflict', 'operator detail: the measurement data conflict', { issues: errors ? [...errors] : undefined }));
          },
        }),
      });
      try {
        await logFuelDays(other, s.phoneNumber, id, '13570', ['2026-04-01', '2026-04-02', '2026-04-03']);
        const d = new GatewaySession([other.baseUrl], s.phoneNumber);
        await login(d, id, '13570');
        await d.walk('3', '1', '1', '1');
        const reply = await d.send('1');
        expect(reply.startsWith(`CON Claim not sent. ${shown}\nServices`), reply).to.equal(true);
        expect(reply).to.not.match(/POST|collection|kpt_|operator/);
        expect(logs).to.include('operator detail: the measurement data conflict');
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
    expect(await c.send('50505')).to.equal('CON That is already your PIN. Choose a different one.\nEnter a new 5-digit PIN\n0. Back');
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
    await r.walk('1', '1');
    const saved = await r.send('4');
    expect(saved).to.match(/^CON Saved 4 kg/);
    expect(await r.retry()).to.equal(saved);
    // a retried wrong PIN counts once
    const w = session(s.phoneNumber);
    const wrong = await login(w, id, '11112');
    expect(await w.retry()).to.equal(wrong);
    const row = (await t.db('ussd_accounts').where('customer_id', id).first())!;
    expect(row.failed_pin_attempts).to.equal(1);
    const logs = await t.db('ussd_fuel_logs').where('account_id', row.id);
    expect(logs).to.have.length(1);
  });

  it('the plain PIN is never stored: sessions and accounts hold only AES-GCM ciphertext', async () => {
    const s = session();
    await s.dial();
    await s.walk('2', '2', 'Jane Doe', '00', '2', '31415');
    const row = (await t.db('ussd_sessions').where('id', s.sessionId).first())!;
    expect(row.snapshot).to.not.include('31415');
    expect(JSON.parse(row.snapshot).context.draft.sealedPin).to.match(/^v1\./);
    await s.send('31415');
    const all = JSON.stringify(await t.db('ussd_accounts'));
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
    const account = (await t.db('ussd_accounts').where('phone_number', s.phoneNumber).first())!;
    const rowsOf: Record<string, unknown[]> = {
      ussd_sessions: await t.db('ussd_sessions').where('phone_number', s.phoneNumber),
      ussd_accounts: [account],
      ussd_fuel_logs: await t.db('ussd_fuel_logs').where('account_id', account.id),
    };
    expect(rowsOf.ussd_sessions).to.have.length.at.least(2);
    for (const [table, rows] of Object.entries(rowsOf)) {
      for (const row of rows as Record<string, unknown>[]) {
        for (const [column, value] of Object.entries(row)) {
          for (const pin of pins) expect(plain(value), `${table}.${column}`).to.not.include(pin);
        }
      }
    }
    const session_ = (await t.db('ussd_sessions').where('id', l.sessionId).first())!;
    expect(session_.last_text_length).to.equal(l.text.length);
    expect(session_.last_text_digest).to.match(/^[0-9a-f]{64}$/);
    // and the stored digest still recognises a retry and the next hop
    expect(await l.retry()).to.match(/^CON PIN changed/);
    expect(await l.send('0')).to.match(/^CON Welcome to Hearth/);
  });
});
