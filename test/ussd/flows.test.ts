import { expect } from 'chai';
import { forEachDatabase } from '../helpers/databases.ts';
import { en } from '../../src/ussd/i18n/en.ts';
import { createAccount, GatewaySession, login, RecordingTwins, startUssdServer, type UssdTestServer } from './helpers.ts';

forEachDatabase('USSD menu flows', (t) => {
  let server: UssdTestServer;
  let twins: RecordingTwins;
  before(async () => {
    twins = new RecordingTwins();
    server = await startUssdServer(t.db, {}, { twins });
  });
  after(() => server.stop());
  const session = () => new GatewaySession([server.baseUrl]);

  it('dial shows the welcome menu with the exit option; exit ENDs', async () => {
    const s = session();
    const welcome = await s.dial();
    expect(welcome).to.equal('CON Welcome to Hearth\n1. Know More\n2. Account Menu\n9. Language / Lugha\n*. Exit');
    expect(await s.send('*')).to.equal('END Thank you for using Hearth. Goodbye.');
    // a retry of the final hop gets the same END; anything after it is told the session ended
    expect(await s.retry()).to.equal('END Thank you for using Hearth. Goodbye.');
    expect(await s.send('1')).to.equal('END This session has ended. Please dial *384*1234# again.');
  });

  it('Know More: topics, paging with 98. More, back and exit', async () => {
    const s = session();
    await s.dial();
    const topics = await s.send('1');
    expect(topics).to.match(/^CON Know More\n1\. Clean cookstoves\n2\. Saving fuel\n3\. The kitchen test\n0\. Back$/);
    const pages = [await s.send('3')];
    while (pages.at(-1)!.includes('\n98. More\n')) pages.push(await s.send('98'));
    expect(pages.length).to.be.greaterThan(1);
    for (const page of pages) {
      expect(page.length).to.be.at.most(182);
      expect(page).to.match(/0\. Back$/);
      // every page ends at the end of a sentence
      expect(page.replace(/(\n98\. More)?\n0\. Back$/, '')).to.match(/\.$/);
    }
    const page2 = pages.at(-1)!;
    expect(page2).to.not.include('98. More');
    const whole = pages.map((p) => p.slice(4).replace(/(\n98\. More)?\n0\. Back$/, '')).join(' ');
    expect(whole).to.equal(`The kitchen test\n${en.topics[2]!.body}`);
    // An invalid choice on page 2 keeps the user on page 2, with the hint first.
    expect(await s.send('7')).to.equal(`CON Invalid choice. Try again.\n${page2.slice(4)}`);
    expect(await s.send('0')).to.equal(topics);
    expect(await s.send('0')).to.match(/^CON Welcome to Hearth/);
  });

  it('the language screen is titled in both languages, the session language first', async () => {
    const s = session();
    await s.dial();
    expect(await s.send('9')).to.equal('CON Choose your language / Chagua lugha yako\n1. English\n2. Kiswahili\n0. Back');
    await s.send('2');
    expect(await s.send('9')).to.equal('CON Chagua lugha yako / Choose your language\n1. English\n2. Kiswahili\n0. Rudi');
  });

  it('an invalid choice re-shows the menu with a hint', async () => {
    const s = session();
    await s.dial();
    expect(await s.send('7')).to.equal('CON Invalid choice. Try again.\nWelcome to Hearth\n1. Know More\n2. Account Menu\n9. Language / Lugha\n*. Exit');
    expect(await s.send('1')).to.match(/^CON Know More/);
  });

  it('a village starts with a letter and may hold numbers: a PIN or an emoji typed there is refused', async () => {
    const s = session();
    await s.dial();
    await s.walk('2', '2', 'Amina Wanjiru');
    const refused = 'CON Village must be 2-40 letters or numbers, starting with a letter.\nEnter your village (optional)\n00. Skip\n0. Back';
    for (const village of ['24680', 'Kijiji\u{1F600}', 'K', 'x'.repeat(41)]) expect(await s.send(village), village).to.equal(refused);
    expect(await s.send('Kibera  Phase 2')).to.match(/^CON Which stove/);
  });

  it('account creation: name, optional village skipped with 00, stove, PIN twice; creates the household twin', async () => {
    const s = session();
    await s.dial();
    expect(await s.walk('2', '2')).to.equal('CON Enter your full name\n0. Back');
    expect(await s.send('Amina Wanjiru')).to.equal('CON Enter your village (optional)\n00. Skip\n0. Back');
    expect(await s.send('00')).to.match(/^CON Which stove/);
    expect(await s.send('1')).to.equal('CON Choose a 5-digit PIN\n0. Back');
    expect(await s.send('11111')).to.match(/^CON PIN too easy/);
    expect(await s.send('12345')).to.match(/^CON PIN too easy/);
    expect(await s.send('1234')).to.match(/^CON PIN must be 5 digits/);
    expect(await s.send('48260')).to.equal('CON Enter the PIN again to confirm\n0. Back');
    expect(await s.send('48261')).to.match(/^CON PINs did not match/);
    await s.send('48260');
    const end = await s.send('48260');
    expect(end).to.match(/^END Account created\. Your Customer ID is \d{8}\./);
    const household = twins.households.at(-1)!;
    expect(household.name).to.equal('Amina Wanjiru');
    const row = (await t.db('ussd_accounts').where('customer_id', household.customerId).first())!;
    expect(row.household_did).to.equal(household.did);
    expect(row.village).to.equal(null);
    expect(row.test_group).to.equal('reference');
    expect(row.pin_encrypted).to.not.include('48260');
    // the session is closed after END
    expect(await s.send('1')).to.match(/^END This session has ended/);
  });

  // The session goes on to log in: it used to END with "Dial again and choose Log in", a paid redial.
  it('a second account for the same phone is refused before any question, and the caller is taken to log in', async () => {
    const s = session();
    const id = await createAccount(s, '97532');
    const again = new GatewaySession([server.baseUrl], s.phoneNumber);
    await again.dial();
    expect(await again.walk('2', '2')).to.equal('CON This phone number already has an account. Log in here.\nEnter your Customer ID\n0. Back');
    expect(await again.walk(id, '97532')).to.match(/^CON Welcome, Jane\.\nServices\n/);
  });

  it('in Kiswahili too, a second account for the same phone takes the caller to log in', async () => {
    const s = session();
    const id = await createAccount(s, '97533');
    const again = new GatewaySession([server.baseUrl], s.phoneNumber);
    await again.dial();
    await again.walk('9', '2');
    expect(await again.walk('2', '2')).to.equal('CON Nambari hii ya simu tayari ina akaunti. Ingia hapa.\nWeka nambari yako ya mteja\n0. Rudi');
    expect(await again.send('0')).to.match(/^CON Akaunti\n1\. Ingia\n/);
    expect(await again.walk('1', id, '97533')).to.match(/^CON Karibu, Jane\.\nHuduma\n/);
  });

  it('login shows Services; the welcome menu then offers 3. Services', async () => {
    const s = session();
    const id = await createAccount(s, '97531');
    const l = new GatewaySession([server.baseUrl], s.phoneNumber);
    const reply = await login(l, id, '97531');
    expect(reply).to.match(/^CON Welcome, Jane\.\nServices\n1\. Log fuel used/);
    expect(await l.send('*')).to.equal('CON Welcome to Hearth\n1. Know More\n2. Account Menu\n3. Services\n9. Language / Lugha\n*. Exit');
    expect(await l.send('3')).to.match(/^CON Services/);
  });

  it('an unknown Customer ID asks again', async () => {
    const s = session();
    await s.dial();
    expect(await s.walk('2', '1', '99999999', '24681')).to.match(/^CON Customer ID not found/);
  });

  it('a * typed mid-flow exits once and does not stick to later hops', async () => {
    const s = session();
    await s.dial();
    await s.walk('2', '2', 'Jane Doe');
    expect(await s.send('*')).to.match(/^CON Welcome to Hearth/);
    // text is now 2*2*Jane Doe** ; the next inputs must be read as new choices, not as exits
    expect(await s.send('1')).to.match(/^CON Know More/);
    expect(await s.send('2')).to.match(/^CON Saving fuel/);
    expect(s.text).to.equal('2*2*Jane Doe***1*2');
  });

  it('0 goes back one level at each step', async () => {
    const s = session();
    await s.dial();
    await s.walk('2', '2', 'Jane Doe', 'Kibera');
    expect(await s.send('0')).to.match(/^CON Enter your village/);
    expect(await s.send('0')).to.match(/^CON Enter your full name/);
    expect(await s.send('0')).to.match(/^CON Account Menu/);
    expect(await s.send('0')).to.match(/^CON Welcome to Hearth/);
  });

  it('a dial shortcut replays its inputs from the welcome menu', async () => {
    const s = session();
    expect(await s.post('1*2')).to.match(/^CON Saving fuel/);
    s.text = '1*2';
    expect(await s.retry()).to.match(/^CON Saving fuel/);
  });

  it('a gateway sending only the latest input works too', async () => {
    const s = session();
    await s.dial();
    expect(await s.post('1')).to.match(/^CON Know More/);
    expect(await s.post('3')).to.match(/^CON The kitchen test/);
  });

  it('every reply is at most 182 characters', async () => {
    const s = session();
    const replies = [await s.dial(), await s.send('1'), await s.send('1'), await s.send('0'), await s.send('2'), await s.send('0'), await s.send('3')];
    for (const r of replies) expect(r.length).to.be.at.most(182);
  });
});
