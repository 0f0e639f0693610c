// The screens of every state, in the session's language (the words are in i18n/<lang>.ts), and
// the pagination that keeps each reply within one USSD screen.
import { SegmentedMessage } from 'sms-segments-calculator';
import type { UssdContext, Notice } from './context.ts';
import { CATALOGUES, LANGUAGES, type Catalogue, type Language } from './i18n/index.ts';
import { MAX_KG_PER_DAY } from '../config.ts';

export const MAX_REPLY_CHARS = 182;
export const MORE = '98';

const catalogue = (lang: Language | undefined): Catalogue => CATALOGUES[lang ?? 'en'];

/** `END <lead> Please dial <code> again.`, without the code when a long one would overflow the screen. */
function dialAgain(lang: Language, lead: 'expired' | 'ended', serviceCode: string): string {
  const t = catalogue(lang);
  const withCode = `END ${t[lead]} ${t.dialAgain(serviceCode)}`;
  return withCode.length <= MAX_REPLY_CHARS ? withCode : `END ${t[lead]} ${t.dialAgainShort}`;
}

export const TEXT = {
  expired: (serviceCode: string, lang: Language = 'en') => dialAgain(lang, 'expired', serviceCode),
  ended: (serviceCode: string, lang: Language = 'en') => dialAgain(lang, 'ended', serviceCode),
};

const back = (t: Catalogue) => `0. ${t.back}`;
const more = (t: Catalogue) => `${MORE}. ${t.more}`;

/** A calendar day (YYYY-MM-DD) as a household reads it: "24 November", "24 Novemba". */
function plainDate(t: Catalogue, iso: string): string {
  const [, month, day] = iso.split('-');
  return `${Number(day)} ${t.months[Number(month) - 1]}`;
}

const isGsm7 = (text: string) => new SegmentedMessage(text).encodingName === 'GSM-7';

/**
 * A name as a USSD screen can carry it. A screen's 182 characters are 7-bit GSM ones: one letter
 * outside that alphabet (ũ, ĩ, ë) sends the whole screen as UCS-2, at most 80 characters, and a
 * handset cuts it or shows nothing. Accents are dropped (Ngũgĩ: Ngugi); a name still outside
 * the alphabet is left out.
 */
export function gsmName(name: string): string | undefined {
  if (isGsm7(name)) return name;
  const plain = name.normalize('NFD').replace(/\p{M}/gu, '').normalize('NFC');
  return isGsm7(plain) ? plain : undefined;
}

function noticeText(n: Notice | undefined, lang: Language | undefined): string | undefined {
  if (!n) return undefined;
  const notices = catalogue(lang).notices;
  const p = n.params ?? {};
  const day = typeof p.day === 'number' ? catalogue(lang).days[p.day]! : '';
  switch (n.key) {
    case 'wrongPin':
      return notices.wrongPin(Number(p.left));
    case 'fuelSaved':
    case 'fuelUpdated':
      return notices[n.key](Number(p.kg), day);
    case 'fuelClaimed':
    case 'dayClaimed':
      return notices[n.key](day);
    case 'logDays': {
      const days = catalogue(lang).days;
      const missing = String(p.days ?? '').split(',').flatMap((offset) => (offset === '' ? [] : days[Number(offset)] ?? []));
      return notices.logDays(missing, Number(p.fromTomorrow ?? 0), Boolean(p.someLogged));
    }
    case 'claimNotSent':
      return notices.claimNotSent(catalogue(lang).reasons[p.reason as keyof Catalogue['reasons']] ?? catalogue(lang).reasons.other);
    case 'loggedIn':
      return notices.loggedIn(gsmName(String(p.name)));
    case 'kgFormat':
      return notices.kgFormat(MAX_KG_PER_DAY);
    default:
      return notices[n.key];
  }
}

/** A screen before pagination: a notice, lines of content and the option lines that end every page. */
export interface Screen {
  end: boolean;
  /** What the last input caused (an invalid choice, a saved reading): first on the page shown. */
  notice?: string;
  lines: string[];
  options?: string[];
  /** The words of `98. More` in the screen's language. */
  more?: string;
}

/** Room a paged screen keeps on every page for a notice: the longest "invalid choice" and its line break. */
const NOTICE_ROOM = Math.max(...LANGUAGES.map((l) => CATALOGUES[l].notices.invalidChoice.length)) + 1;

const numbered = (items: readonly string[]) => items.map((t, i) => `${i + 1}. ${t}`);

/** The home (welcome) menu's option for choosing a language. */
export const LANGUAGE_OPTION = '9';

export function renderScreen(state: string, c: UssdContext, appName: string): Screen {
  const t = catalogue(c.lang);
  const notice = noticeText(c.notice, c.lang);
  const con = (lines: string[], options: string[] = [back(t)]): Screen => ({ end: false, ...(notice ? { notice } : {}), lines, options, more: more(t) });
  const end = (...lines: string[]): Screen => ({ end: true, lines });
  const claimLine = (line: string) => [line, ...(c.claimResult?.reason ? [t.reasons[c.claimResult.reason]] : [])].join(' ');
  switch (state) {
    case 'preMenu':
      return con(
        [t.welcome(appName), ...numbered([t.home.knowMore, t.home.account, ...(c.isAuthenticated ? [t.home.services] : [])]), `${LANGUAGE_OPTION}. ${t.home.language}`],
        [`*. ${t.home.exit}`],
      );
    case 'language': {
      // Titled in every language, the session's first, as the welcome menu's item is: whoever
      // needs this screen may not read the language it opens in.
      const title = [t, ...LANGUAGES.map((l) => CATALOGUES[l]).filter((other) => other !== t)].map((x) => x.chooseLanguage).join(' / ');
      return con([title, ...numbered(LANGUAGES.map((l) => CATALOGUES[l].name))]);
    }
    case 'goodbye':
      return end(t.goodbye(appName));
    case 'knowMore':
      return con([t.knowMore, ...numbered(t.topics.map((x) => x.title))]);
    case 'knowMoreTopic': {
      const topic = t.topics[c.topic ?? 0]!;
      return con([topic.title, topic.body]);
    }
    case 'accountMenu':
      return con([t.accountMenu, ...numbered(t.accountOptions)]);
    case 'loginCustomerId':
      return con([t.enterCustomerId]);
    case 'loginPin':
      return con([t.enterPin]);
    case 'recoverPin':
      return con([t.recoverPin]);
    case 'customerIdShown':
      return con([t.customerIdShown(c.customerId ?? ''), `1. ${t.accountOptions[0]}`]);
    case 'locked':
      return end(t.locked);
    case 'createName':
      return con([t.enterName]);
    case 'createVillage':
      return con([t.enterVillage], [`00. ${t.skip}`, back(t)]);
    case 'createGroup':
      return con([t.whichStove, ...numbered(t.stoves)]);
    case 'createPin':
      return con([t.choosePin]);
    case 'createPinConfirm':
      return con([t.confirmPin]);
    case 'accountCreated':
      return end(t.accountCreated(c.customerId ?? ''));
    case 'services':
      return con([t.services, ...numbered(t.serviceOptions)]);
    case 'fuelDay':
      return con([t.whichDay, ...numbered(t.days)]);
    case 'fuelAmount':
      return con([t.enterKg(t.days[c.fuelDay ?? 0]!)]);
    case 'fuelConfirm':
      return con([t.confirmKg(c.pendingKg ?? 0, t.days[c.fuelDay ?? 0]!, c.unusualKg !== 'low'), ...numbered(t.confirmOptions)]);
    case 'review': {
      const logs = c.review ?? [];
      const total = round(logs.reduce((s, l) => s + l.kg, 0));
      return con(logs.length ? [t.review(logs.length, total), ...logs.map((l) => t.dayLine(plainDate(t, l.date), l.kg))] : [t.noDays]);
    }
    case 'claimConfirm': {
      const d = c.claimDraft!;
      return con([t.claimConfirm(d.days, d.total), `1. ${t.send}`]);
    }
    case 'claimSeason':
      return con([t.season, ...numbered(t.seasons)]);
    case 'claimEvents':
      return con([t.events, ...numbered(t.eventOptions)]);
    case 'claimWork':
      return con([t.work, ...numbered(t.workOptions)]);
    case 'claimSubmitted':
      return end(claimLine(t.claimSent(c.claimResult?.ref ?? '', t.statuses[c.claimResult?.status ?? 'pending'])));
    case 'claimStatus':
      return con([
        c.claimResult ? claimLine(t.claimStatus(c.claimResult.ref, t.statuses[c.claimResult.status], c.claimResult.submittedOn && plainDate(t, c.claimResult.submittedOn))) : t.noClaim,
      ]);
    case 'changePinCurrent':
      return con([t.currentPin]);
    case 'changePinNew':
      return con([t.newPin]);
    case 'changePinConfirm':
      return con([t.newPinAgain]);
    default:
      throw new Error(`no screen for state ${state}`);
  }
}

/** Screens that show the customer's own data, as the operator sees them (no dates, amounts, claim ids or Customer IDs). */
const OPERATOR_REDACTED: Record<string, string[]> = {
  review: ['Logged days [redacted]'],
  fuelConfirm: ['Confirm an unusual amount [redacted]'],
  claimConfirm: ['Send claim [days and total redacted]', '1. Send'],
  claimStatus: ['Claim status [redacted]'],
  customerIdShown: ['Customer ID [redacted]', '1. Log in'],
};

/**
 * The user's current screen for the operator's debug view (only open sessions are shown): its
 * menu without notices (which carry names, dates and amounts), customer data redacted.
 */
export function operatorScreen(state: string, c: UssdContext, appName: string): string {
  const screen = renderScreen(state, { ...c, notice: undefined }, appName);
  return [...(OPERATOR_REDACTED[state] ?? screen.lines), ...(screen.options ?? [])].join('\n');
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Splits a screen into replies of at most 182 characters. Content that does not fit continues
 * on the next page behind `98. More`; nothing is cut, an option line is never split and a
 * paragraph breaks between sentences (between words only for a sentence longer than a page).
 * Returns the page asked for (clamped) and how many pages there are.
 */
export function paginate(screen: Screen, page: number): { reply: string; pages: number } {
  const prefix = screen.end ? 'END ' : 'CON ';
  const options = screen.options ?? [];
  const head = screen.notice ? [screen.notice] : [];
  const whole = prefix + [...head, ...screen.lines, ...options].join('\n');
  if (whole.length <= MAX_REPLY_CHARS) return { reply: whole, pages: 1 };
  // END screens have no way to page; their texts are written to fit (a test checks every one).
  if (screen.end) throw new Error(`END screen longer than ${MAX_REPLY_CHARS} characters`);
  const moreLine = screen.more ?? `${MORE}. More`;
  const footer = [moreLine, ...options].join('\n');
  // Every page keeps room for a notice line, so a notice (an invalid choice on page 3) shows on
  // the page the user is on without moving its content; only a longer notice widens the room.
  const noticeRoom = Math.max(NOTICE_ROOM, screen.notice ? screen.notice.length + 1 : 0);
  const room = MAX_REPLY_CHARS - prefix.length - footer.length - 1 - noticeRoom;
  const chunks = pack(pieces(screen.lines, room), room);
  const i = Math.max(0, Math.min(page, chunks.length - 1));
  // Every page but the last offers `98. More`; the last page ends with the options alone.
  const tail = i === chunks.length - 1 ? options : [moreLine, ...options];
  return { reply: prefix + [...head, chunks[i]!, ...tail].join('\n'), pages: chunks.length };
}

/** A piece of content that stays on one page, and what joins it to the piece before. */
interface Piece {
  text: string;
  join: '\n' | ' ';
}

/** Lines that fit a page stay whole; longer ones are cut into sentences, and a sentence too long into words. */
function pieces(lines: string[], room: number): Piece[] {
  const fits = (s: string) => s.length <= room;
  return lines.flatMap((line) => {
    const parts = fits(line)
      ? [line]
      : line.split(/(?<=[.!?;:])\s+/).flatMap((s) => (fits(s) ? [s] : s.split(' ').flatMap((w) => w.match(new RegExp(`.{1,${room}}`, 'gsu')) ?? [])));
    return parts.map((text, i): Piece => ({ text, join: i === 0 ? '\n' : ' ' }));
  });
}

/** Fills pages with whole pieces. */
function pack(all: Piece[], room: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const p of all) {
    if (current && current.length + 1 + p.text.length > room) {
      chunks.push(current);
      current = '';
    }
    current = current ? current + p.join + p.text : p.text;
  }
  if (current) chunks.push(current);
  return chunks;
}
