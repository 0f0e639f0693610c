// The whole household journey over HTTP with the defaults of `make start` (area A's real claim
// service, the seeded `ussd` collection): create an account, log today, yesterday and the day
// before, send the claim, check its status, in English and in Swahili. Two households on the
// two stoves, the same days: the second claim verifies both.
import { USSD_COLLECTION_DESIGN } from '../../src/ussd/collections.ts';
import { expect } from 'chai';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey } from '../helpers/server.ts';

/** A day as CLDR (Intl) writes it in `locale`: "24 November", "24 Novemba". */
const cldrDate = (locale: string, at: string) => new Intl.DateTimeFormat(locale, { day: 'numeric', month: 'long', timeZone: 'UTC' }).format(new Date(at));
import { GatewaySession, startUssdServer, type UssdTestServer } from './helpers.ts';

/** A gateway session that keeps a transcript of what the household typed and saw. */
class Phone extends GatewaySession {
  readonly transcript: string[] = [];
  override async dial(): Promise<string> {
    const reply = await super.dial();
    this.transcript.push(`(dial ${this.serviceCode})`, reply);
    return reply;
  }
  override async send(input: string): Promise<string> {
    const reply = await super.send(input);
    this.transcript.push(`> ${input}`, reply);
    return reply;
  }
}

const dayBefore = (date: string, days: number) => new Date(Date.parse(`${date}T12:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);

forEachDatabase('USSD household journey (make start defaults)', (t) => {
  let server: UssdTestServer;
  let key: string;
  before(async () => {
    // Area A stamps claims with the real time; the gateway's clock starts at it too.
    server = await startUssdServer(t.db, {}, { clock: { now: new Date() } });
    key = await createTestKey(t.db, { scopes: ['claims:read'] });
  });
  after(() => server.stop());
  const claimOf = async (ref: string) => {
    const row = (await t.db('ussd_claim_refs').where('ref', ref).first())!;
    const res = await fetch(`${server.baseUrl}/v1/claims/${row.claim_id}`, { headers: { Authorization: `Bearer ${key}` } });
    return res.json();
  };

  it('English (old stove) then Swahili (clean stove): create, log 3 days back from today, send, status; the pair is verified', async () => {
    const today = server.clock.now.toISOString().slice(0, 10);
    const urls = [server.baseUrl];

    // ---- Amina, in English, cooks on an old stove ----
    const a = new Phone(urls, '+254711000001');
    expect(await a.dial()).to.equal('CON Welcome to Hearth\n1. Know More\n2. Account Menu\n9. Language / Lugha\n*. Exit');
    expect(await a.send('2')).to.equal('CON Account Menu\n1. Log in\n2. Create account\n3. Forgot Customer ID\n0. Back');
    expect(await a.send('2')).to.equal('CON Enter your full name\n0. Back');
    expect(await a.send('Amina Otieno')).to.equal('CON Enter your village (optional)\n00. Skip\n0. Back');
    expect(await a.send('00')).to.equal('CON Which stove do you cook on?\n1. Old stove or open fire\n2. New clean stove\n0. Back');
    expect(await a.send('1')).to.equal('CON Choose a 5-digit PIN\n0. Back');
    expect(await a.send('24680')).to.equal('CON Enter the PIN again to confirm\n0. Back');
    const created = await a.send('24680');
    const aId = /^END Account created\. Your Customer ID is (\d{8})\. Keep it and your PIN safe\. Dial again and log in to record fuel use\.$/.exec(created)![1]!;

    const a2 = new Phone(urls, a.phoneNumber);
    await a2.dial();
    await a2.walk('2', '1', aId);
    expect(await a2.send('24680')).to.equal(
      'CON Welcome, Amina.\nServices\n1. Log fuel used\n2. Review logged days\n3. Send claim\n4. Claim status\n5. Change PIN\n0. Back',
    );
    expect(await a2.send('1')).to.equal('CON Fuel used on which day?\n1. Today\n2. Yesterday\n3. The day before yesterday\n0. Back');
    expect(await a2.send('3')).to.equal('CON Enter kg of fuel used the day before yesterday (e.g. 2.5)\n0. Back');
    expect(await a2.send('3')).to.match(/^CON Saved 3 kg for the day before yesterday\.\nServices\n/);
    expect(await a2.walk('1', '2', '3.5')).to.match(/^CON Saved 3\.5 kg for yesterday\.\n/);
    expect(await a2.walk('1', '1', '2.5')).to.match(/^CON Saved 2\.5 kg for today\.\n/);
    expect(await a2.send('2')).to.equal(
      `CON Logged: 3 days, total 9 kg\n${cldrDate('en-GB', dayBefore(today, 2))}: 3 kg\n${cldrDate('en-GB', dayBefore(today, 1))}: 3.5 kg\n${cldrDate('en-GB', today)}: 2.5 kg\n0. Back`,
    );
    await a2.send('0');
    expect(await a2.send('3')).to.equal('CON Send a claim for 3 days, total 9 kg?\n1. Send\n0. Back');
    expect(await a2.send('1')).to.equal('CON Which season is it?\n1. Dry\n2. Rainy\n3. Cold\n0. Back');
    expect(await a2.send('2')).to.equal('CON Any special event on these days?\n1. None\n2. Festival or holiday\n3. Funeral or ceremony\n0. Back');
    expect(await a2.send('1')).to.equal('CON Main work of your home?\n1. Farming\n2. Trading\n3. Paid work\n4. Other\n0. Back');
    const aSent = await a2.send('1');
    const aRef = /^END Claim sent\. Reference ([A-Z0-9]{8})\. Status: Waiting\. We are waiting for homes with the other stove to send the same days\.$/.exec(aSent)![1]!;
    expect((await claimOf(aRef)).status).to.equal('pending');

    // ---- Baraka, in Swahili, cooks on a clean stove ----
    const b = new Phone(urls, '+254711000002');
    await b.dial();
    expect(await b.send('9')).to.equal('CON Choose your language / Chagua lugha yako\n1. English\n2. Kiswahili\n0. Back');
    expect(await b.send('2')).to.equal('CON Lugha: Kiswahili.\nKaribu Hearth\n1. Jifunze Zaidi\n2. Akaunti\n9. Lugha / Language\n*. Toka');
    expect(await b.send('2')).to.equal('CON Akaunti\n1. Ingia\n2. Fungua akaunti\n3. Nimesahau nambari ya mteja\n0. Rudi');
    expect(await b.send('2')).to.equal('CON Weka jina lako kamili\n0. Rudi');
    expect(await b.send('Baraka Mwangi')).to.equal('CON Weka kijiji chako (si lazima)\n00. Ruka\n0. Rudi');
    expect(await b.send('Kibera')).to.equal('CON Unapikia jiko gani?\n1. Jiko la zamani au mafiga\n2. Jiko jipya banifu\n0. Rudi');
    expect(await b.send('2')).to.equal('CON Chagua PIN ya tarakimu 5\n0. Rudi');
    expect(await b.send('13579')).to.equal('CON Weka PIN tena kuthibitisha\n0. Rudi');
    const bCreated = await b.send('13579');
    const bId = /^END Akaunti imefunguliwa\. Nambari yako ya mteja ni (\d{8})\./.exec(bCreated)![1]!;
    expect((await t.db('ussd_accounts').where('customer_id', bId).first())!.language).to.equal('sw');

    // The next dial greets the phone in its language.
    const b2 = new Phone(urls, b.phoneNumber);
    expect(await b2.dial()).to.equal('CON Karibu Hearth\n1. Jifunze Zaidi\n2. Akaunti\n9. Lugha / Language\n*. Toka');
    await b2.walk('2', '1', bId);
    expect(await b2.send('13579')).to.equal(
      'CON Karibu, Baraka.\nHuduma\n1. Rekodi kuni au mkaa\n2. Angalia siku ulizorekodi\n3. Tuma ripoti\n4. Hali ya ripoti\n5. Badilisha PIN\n0. Rudi',
    );
    expect(await b2.send('1')).to.equal('CON Kuni au mkaa wa siku gani?\n1. Leo\n2. Jana\n3. Juzi\n0. Rudi');
    expect(await b2.send('3')).to.equal('CON Weka kilo za kuni au mkaa zilizotumika juzi (mf. 2.5)\n0. Rudi');
    expect(await b2.send('2')).to.match(/^CON Kilo 2 zimehifadhiwa kwa juzi\.\nHuduma\n/);
    expect(await b2.walk('1', '2', '2,5')).to.match(/^CON Kilo 2\.5 zimehifadhiwa kwa jana\.\n/);
    expect(await b2.walk('1', '1', '1.5')).to.match(/^CON Kilo 1\.5 zimehifadhiwa kwa leo\.\n/);
    expect(await b2.send('3')).to.equal('CON Tuma ripoti ya siku 3, jumla kilo 6?\n1. Tuma\n0. Rudi');
    expect(await b2.send('1')).to.equal('CON Ni msimu gani sasa?\n1. Kiangazi\n2. Mvua\n3. Baridi\n0. Rudi');
    expect(await b2.send('2')).to.equal('CON Kulikuwa na tukio maalum siku hizi?\n1. Hapana\n2. Sikukuu\n3. Mazishi au sherehe\n0. Rudi');
    expect(await b2.send('1')).to.equal('CON Kazi kuu ya nyumba yako?\n1. Kilimo\n2. Biashara\n3. Kazi ya mshahara\n4. Nyingine\n0. Rudi');
    const bSent = await b2.send('2');
    const bRef = /^END Ripoti imetumwa\. Nambari ya kumbukumbu ([A-Z0-9]{8})\. Hali: Imekubaliwa\.$/.exec(bSent)![1]!;
    const bClaim = await claimOf(bRef);
    expect(bClaim.status).to.equal('verified');
    expect(bClaim.collectionId).to.equal('ussd');
    expect(bClaim.testPeriod).to.include({ startDate: dayBefore(today, 2), endDate: today });

    const b3 = new Phone(urls, b.phoneNumber);
    await b3.dial();
    await b3.walk('2', '1', bId, '13579');
    // The status shows the day area A recorded the claim.
    expect(await b3.send('4')).to.equal(`CON Ripoti ${bRef} ya ${cldrDate('sw', bClaim.createdAt)}: Imekubaliwa.\n0. Rudi`);

    // Amina's waiting claim was verified when Baraka's arrived.
    const a3 = new Phone(urls, a.phoneNumber);
    await a3.dial();
    await a3.walk('2', '1', aId, '24680');
    const aClaim = await claimOf(aRef);
    expect(await a3.send('4')).to.equal(`CON Claim ${aRef} of ${cldrDate('en-GB', aClaim.createdAt)}: Accepted.\n0. Back`);
    expect(aClaim.status).to.equal('verified');
    // Verified under a design that is true of them: the census of the households registered over USSD, stated as such.
    for (const claim of [aClaim, bClaim]) {
      expect(claim.checks.find((c: { rule: string }) => c.rule === 'random-selection-verified')).to.include({ outcome: 'passed' });
      expect(claim.verifiableCredential.credentialSubject).to.include({ selectionDesign: 'full-population', selectionFrame: USSD_COLLECTION_DESIGN.frame });
    }
    const report = await (await fetch(`${server.baseUrl}/v1/collections/ussd/report`, { headers: { Authorization: `Bearer ${key}` } })).json();
    expect(report.selection).to.deep.equal({ design: USSD_COLLECTION_DESIGN, draws: [], claimsHeldApart: 0 });

    for (const phone of [a, a2, b, b2, b3, a3]) for (const line of phone.transcript) expect(line.length).to.be.at.most(182);
  });

  it('a language chosen while logged in is kept on the account; the expired reply is in the session language', async () => {
    const s = new Phone([server.baseUrl], '+254711000003');
    await s.dial();
    await s.walk('2', '2', 'Neema Achieng', '00', '1', '97531');
    const id = /Customer ID is (\d+)/.exec(await s.send('97531'))![1]!;
    const l = new Phone([server.baseUrl], s.phoneNumber);
    await l.dial();
    await l.walk('2', '1', id, '97531', '*', '9');
    expect(await l.send('2')).to.match(/^CON Lugha: Kiswahili\.\nKaribu Hearth\n1\. Jifunze Zaidi\n2\. Akaunti\n3\. Huduma\n/);
    expect((await t.db('ussd_accounts').where('customer_id', id).first())!.language).to.equal('sw');
    server.clock.now = new Date(server.clock.now.getTime() + 3_600_000);
    try {
      expect(await l.send('3')).to.equal('END Muda wa kipindi chako umekwisha. Tafadhali piga *384*1234# tena.');
    } finally {
      server.clock.now = new Date(server.clock.now.getTime() - 3_600_000);
    }
    // back to English from the Swahili menu
    const e = new Phone([server.baseUrl], s.phoneNumber);
    expect(await e.dial()).to.match(/^CON Karibu Hearth/);
    expect(await e.walk('9', '1')).to.match(/^CON Language: English\.\nWelcome to Hearth/);
    expect((await t.db('ussd_accounts').where('customer_id', id).first())!.language).to.equal('en');
  });
});
