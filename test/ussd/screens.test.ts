// Every screen of every language, with the longest values it can show, fits one USSD screen;
// options are never split across pages; households never read programme jargon; and a
// language's screens hold no words of another.
import { expect } from 'chai';
import { SegmentedMessage } from 'sms-segments-calculator';
import { CATALOGUES, FUEL_DAYS, LANGUAGES, type Language, type ReasonKey } from '../../src/ussd/i18n/index.ts';
import { EFFECT_TAG, ussdMachine } from '../../src/ussd/machine.ts';
import type { Notice, UssdContext } from '../../src/ussd/context.ts';
import { gsmName, MAX_REPLY_CHARS, operatorScreen, paginate, renderScreen, TEXT } from '../../src/ussd/menus.ts';

const APP_NAME = 'A'.repeat(40); // USSD_APP_NAME's longest
const SCREEN_STATES = Object.keys(ussdMachine.states).filter((s) => !ussdMachine.states[s]!.tags.includes(EFFECT_TAG));
const REASONS = Object.keys(CATALOGUES.en.reasons) as ReasonKey[];

/** Every notice with its longest parameters. */
const NOTICES: Notice[] = [
  ...(Object.keys(CATALOGUES.en.notices) as Notice['key'][]).flatMap((key): Notice[] =>
    Array.from({ length: FUEL_DAYS }, (_, day) => ({
      key,
      params: { left: 2, kg: 9999.999, day, days: 99, name: 'N'.repeat(40), reason: 'other' },
    })),
  ),
  ...REASONS.map((reason): Notice => ({ key: 'claimNotSent', params: { reason } })),
  // What to log before a claim, as claims.ts can ask it: any missing days of the three open ones
  // (none claimed); after a claim, those of the days since it, and the rest from tomorrow on.
  ...[
    ...['2,1,0', '2,1', '2,0', '1,0', '2', '1', '0'].map((days) => [days, 0, days.length < 5 ? 1 : 0] as const),
    ['1,0', 1, 0], ['1', 1, 1], ['0', 1, 1], ['', 1, 1], ['0', 2, 0], ['', 2, 1], ['', 3, 0],
  ].map(([days, fromTomorrow, someLogged]): Notice => ({ key: 'logDays', params: { days, fromTomorrow, someLogged } })),
  // Names as households type them, in letters the GSM alphabet has or has not.
  ...['Ngũgĩ', 'Zoë', 'Ñdegwa', 'Amína', 'አበበ', 'Wanjirũ-Ngũgĩ'.repeat(3)].map((name): Notice => ({ key: 'loggedIn', params: { name } })),
];

/** Contexts with the longest values each screen shows. */
function contexts(lang: Language): UssdContext[] {
  const base: UssdContext = {
    appName: APP_NAME,
    lang,
    isAuthenticated: true,
    customerId: '99999999',
    draft: {},
    page: 0,
    review: Array.from({ length: 14 }, (_, i) => ({ date: `2026-03-${String(i + 1).padStart(2, '0')}`, kg: 9999.999 })),
    claimDraft: { days: 14, total: 139999.986, startDate: '2026-03-01', endDate: '2026-03-14' },
    pendingKg: 9999.999,
  };
  const claims = (['verified', 'pending', 'rejected'] as const).flatMap((status) =>
    [undefined, ...REASONS].map((reason) => ({ ref: 'ACDEFGHJ', status, submittedOn: '2026-03-04', ...(reason ? { reason } : {}) })),
  );
  return [
    base,
    { ...base, isAuthenticated: false, review: [], claimResult: undefined },
    ...Array.from({ length: 3 }, (_, topic) => ({ ...base, topic })),
    ...Array.from({ length: FUEL_DAYS }, (_, fuelDay) => ({ ...base, fuelDay })),
    ...(['high', 'low'] as const).map((unusualKg) => ({ ...base, unusualKg })),
    ...claims.map((claimResult) => ({ ...base, claimResult })),
  ];
}

/** Every page of a screen. */
function pages(state: string, c: UssdContext): string[] {
  const screen = renderScreen(state, c, c.appName);
  const { pages: n } = paginate(screen, 0);
  return Array.from({ length: n }, (_, i) => paginate(screen, i).reply);
}

describe('USSD screens in every language', () => {
  it('a name is shown in GSM letters: accents dropped, a name still outside the alphabet left out', () => {
    expect(['Ngũgĩ', 'Zoë', 'Ñdegwa', 'Amína', 'Ẹmẹka', 'አበበ', 'Zawadi'].map(gsmName)).to.deep.equal(['Ngugi', 'Zoe', 'Ñdegwa', 'Amina', 'Emeka', undefined, 'Zawadi']);
    expect(renderScreen('services', { ...contexts('en')[0]!, notice: { key: 'loggedIn', params: { name: 'Ngũgĩ' } } }, 'Hearth').notice).to.equal('Welcome, Ngugi.');
    expect(renderScreen('services', { ...contexts('sw')[0]!, notice: { key: 'loggedIn', params: { name: 'አበበ' } } }, 'Hearth').notice).to.equal('Karibu.');
  });

  it('the catalogues say the same things: as many topics and days, in every language', () => {
    for (const lang of LANGUAGES) {
      expect(CATALOGUES[lang].topics, lang).to.have.length(CATALOGUES.en.topics.length);
      expect(CATALOGUES[lang].days, lang).to.have.length(FUEL_DAYS);
    }
  });

  it("the months' names are CLDR's (Intl) in every language", () => {
    for (const lang of LANGUAGES) {
      const cldr = Array.from({ length: 12 }, (_, i) => new Intl.DateTimeFormat(lang, { month: 'long', timeZone: 'UTC' }).format(new Date(Date.UTC(2026, i, 15))));
      expect(CATALOGUES[lang].months, lang).to.deep.equal(cldr);
    }
  });

  for (const lang of LANGUAGES) {
    it(`${lang}: every page of every screen, with any notice, is at most ${MAX_REPLY_CHARS} characters with its CON/END prefix`, () => {
      let checked = 0;
      const distinct = new Set<string>();
      for (const state of SCREEN_STATES) {
        for (const c of contexts(lang)) {
          for (const notice of [undefined, ...NOTICES]) {
            for (const reply of pages(state, { ...c, notice })) {
              expect(reply, `${lang} ${state}`).to.match(/^(CON|END) /);
              expect(reply.length, `${lang} ${state}: ${reply}`).to.be.at.most(MAX_REPLY_CHARS);
              distinct.add(reply);
              checked++;
            }
          }
        }
      }
      for (const reply of [TEXT.expired('*384*1234#', lang), TEXT.ended('*384*1234#', lang), TEXT.expired(`*${'1'.repeat(170)}#`, lang)]) {
        expect(reply.length).to.be.at.most(MAX_REPLY_CHARS);
      }
      expect(checked).to.be.greaterThan(1000);
      // An independent SMS encoder: one character outside the GSM alphabet makes a screen UCS-2
      // (80 characters), and one of its extension table takes two of the 182.
      for (const reply of distinct) {
        const encoded = new SegmentedMessage(reply);
        expect(encoded.encodingName, `${lang}: ${reply}`).to.equal('GSM-7');
        expect(encoded.numberOfCharacters, `${lang}: ${reply}`).to.be.at.most(MAX_REPLY_CHARS);
      }
    });

    it(`${lang}: paging never splits an option, and Know More pages end at the end of a sentence`, () => {
      for (const state of SCREEN_STATES) {
        for (const c of contexts(lang)) {
          for (const notice of [undefined, ...NOTICES]) {
            const screen = renderScreen(state, { ...c, notice }, APP_NAME);
            const shown = pages(state, { ...c, notice }).flatMap((p) => p.slice(4).split('\n'));
            for (const option of screen.lines.filter((l) => /^\d+\. /.test(l))) expect(shown, `${lang} ${state}`).to.include(option);
          }
        }
      }
      for (const topic of [0, 1, 2]) {
        const c = { ...contexts(lang)[0]!, topic };
        const all = pages('knowMoreTopic', c);
        for (const page of all) {
          const body = page.slice(4).split('\n').filter((l) => !/^\d+\. /.test(l));
          expect(body.at(-1), page).to.match(/[.!?]$/);
        }
        const topicText = CATALOGUES[lang].topics[topic]!;
        const joined = all.map((p) => p.slice(4).split('\n').filter((l) => !/^\d+\. /.test(l)).join('\n')).join(' ');
        expect(joined).to.equal(`${topicText.title}\n${topicText.body}`);
      }
    });

    it(`${lang}: no programme jargon or developer text reaches a household`, () => {
      for (const state of SCREEN_STATES) {
        for (const c of contexts(lang)) {
          for (const notice of [undefined, ...NOTICES]) {
            for (const reply of pages(state, { ...c, notice })) {
              expect(reply, `${lang} ${state}`).to.not.match(/KPT|intervention|reference group|collection|selection|POST|\/v1|evidence|did:|undefined|NaN/i);
            }
          }
        }
      }
    });
  }

  it('what to log before a claim reads as an instruction in both languages: no "too" when nothing is logged, tomorrow after a claim', () => {
    const say = (lang: Language, days: string, fromTomorrow: number, someLogged: number) =>
      renderScreen('services', { ...contexts(lang)[0]!, notice: { key: 'logDays', params: { days, fromTomorrow, someLogged } } }, 'Hearth').notice;
    expect(say('en', '2,1,0', 0, 0)).to.equal('A claim needs 3 days in a row. Log the day before yesterday, yesterday and today, then send.');
    expect(say('sw', '2,1,0', 0, 0)).to.equal('Ripoti inahitaji siku 3 mfululizo. Weka kilo za juzi, jana na leo, kisha tuma.');
    expect(say('en', '1', 0, 1)).to.equal('A claim needs 3 days in a row. Log yesterday too, then send.');
    expect(say('sw', '1', 0, 1)).to.equal('Ripoti inahitaji siku 3 mfululizo. Weka kilo za jana pia, kisha tuma.');
    expect(say('en', '', 3, 0)).to.equal('A new claim needs 3 days in a row not yet sent. Log each of the next 3 days, starting tomorrow, then send.');
    expect(say('sw', '', 3, 0)).to.equal('Ripoti mpya inahitaji siku 3 mfululizo ambazo hazijatumwa. Weka kilo za siku 3 zijazo, kuanzia kesho, kisha tuma.');
    expect(say('en', '0', 2, 0)).to.equal('A new claim needs 3 days in a row not yet sent. Log today, tomorrow and the day after tomorrow, then send.');
    expect(say('sw', '0', 2, 0)).to.equal('Ripoti mpya inahitaji siku 3 mfululizo ambazo hazijatumwa. Weka kilo za leo, kesho na kesho kutwa, kisha tuma.');
    expect(say('en', '', 1, 1)).to.equal('A new claim needs 3 days in a row not yet sent. Log tomorrow too, then send.');
    expect(say('sw', '', 1, 1)).to.equal('Ripoti mpya inahitaji siku 3 mfululizo ambazo hazijatumwa. Weka kilo za kesho pia, kisha tuma.');
  });

  it("the operator's view of an open session shows no Customer ID, claim reference, amount or date", () => {
    // END screens close their session: the debug view shows only open ones.
    const open = SCREEN_STATES.filter((s) => ussdMachine.states[s]!.type !== 'final');
    expect(open).to.include('customerIdShown');
    for (const state of open) {
      for (const c of contexts('en')) {
        expect(operatorScreen(state, c, APP_NAME), state).to.not.match(/99999999|ACDEFGHJ|9999\.999|139999|March/);
      }
    }
  });

  it('Kiswahili reads as reviewed for #52, beside the English it says (a claim is a ripoti; no dai, Itunze or Ingizo)', () => {
    const screen = (lang: Language, state: string, extra: Partial<UssdContext> = {}) => paginate(renderScreen(state, { ...contexts(lang)[0]!, ...extra }, 'Hearth'), 0).reply;
    const ref = { ref: 'ACDEFGHJ', status: 'verified' as const };
    expect(CATALOGUES.sw.topics[1]!.body).to.include('Kila kilo unayoiokoa ni pesa na muda.');
    expect(CATALOGUES.en.topics[1]!.body).to.include('Every kilogram saved is money and time saved.');
    expect(screen('sw', 'customerIdShown')).to.equal('CON Nambari yako ya mteja ni 99999999. Ihifadhi vizuri, na usimwambie mtu PIN yako.\n1. Ingia\n0. Rudi');
    expect(screen('en', 'customerIdShown')).to.equal('CON Your Customer ID is 99999999. Keep it and your PIN safe.\n1. Log in\n0. Back');
    expect(screen('sw', 'accountCreated')).to.equal(
      'END Akaunti imefunguliwa. Nambari yako ya mteja ni 99999999. Ihifadhi vizuri, na usimwambie mtu PIN yako. Piga tena uingie kurekodi kuni au mkaa.',
    );
    expect(screen('sw', 'claimSubmitted', { claimResult: ref })).to.equal('END Ripoti imetumwa. Nambari ya kumbukumbu ACDEFGHJ. Hali: Imekubaliwa.');
    expect(screen('en', 'claimSubmitted', { claimResult: ref })).to.equal('END Claim sent. Reference ACDEFGHJ. Status: Accepted.');
    expect(screen('sw', 'claimStatus', { claimResult: { ...ref, status: 'pending', submittedOn: '2026-03-04' } })).to.equal('CON Ripoti ACDEFGHJ ya 4 Machi: Inasubiri.\n0. Rudi');
    const updated = { key: 'fuelUpdated' as const, params: { kg: 3, day: 0 } };
    expect(renderScreen('services', { ...contexts('sw')[0]!, notice: updated }, 'Hearth').notice).to.equal('Kilo za leo zimebadilishwa kuwa 3.');
    expect(renderScreen('services', { ...contexts('en')[0]!, notice: updated }, 'Hearth').notice).to.equal('Changed today to 3 kg.');
    expect(CATALOGUES.sw.failures.invalidInput).to.equal('Ulichoweka si sahihi. Tafadhali jaribu tena.');
    expect(CATALOGUES.en.failures.invalidInput).to.equal('Invalid input. Please try again.');
    expect(screen('sw', 'services')).to.equal('CON Huduma\n1. Rekodi kuni au mkaa\n2. Angalia siku ulizorekodi\n3. Tuma ripoti\n4. Hali ya ripoti\n5. Badilisha PIN\n0. Rudi');
    for (const state of SCREEN_STATES) {
      for (const c of contexts('sw')) {
        for (const notice of [undefined, ...NOTICES]) {
          for (const reply of pages(state, { ...c, notice })) expect(reply, `sw ${state}`).to.not.match(/\b(dai|madai|Itunze|Ingizo|unayookoa)\b/i);
        }
      }
    }
  });

  it("the language screen's title is in both languages, the session's first", () => {
    expect(paginate(renderScreen('language', contexts('en')[0]!, 'Hearth'), 0).reply).to.equal('CON Choose your language / Chagua lugha yako\n1. English\n2. Kiswahili\n0. Back');
    expect(paginate(renderScreen('language', contexts('sw')[0]!, 'Hearth'), 0).reply).to.equal('CON Chagua lugha yako / Choose your language\n1. English\n2. Kiswahili\n0. Rudi');
  });

  it('Swahili screens carry no English words (the language option and screen name both languages)', () => {
    const english = /\b(Back|More|Exit|Welcome|Enter|Claim|Services|Account|Invalid|Saved|Status|Reference|Today|Yesterday|Send|Skip|kg)\b/;
    for (const state of SCREEN_STATES) {
      for (const c of contexts('sw')) {
        for (const notice of [undefined, ...NOTICES]) {
          for (const reply of pages(state, { ...c, notice })) {
            expect(reply.replace('Lugha / Language', '').replace(APP_NAME, ''), `sw ${state}`).to.not.match(english);
          }
        }
      }
    }
  });
});
