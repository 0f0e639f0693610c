// Every text the USSD user sees, in one place (for wording changes and translation), and the
// pagination that keeps each reply within one USSD screen.
import type { UssdContext, Notice } from './machine.ts';

export const MAX_REPLY_CHARS = 182;
export const MORE = '98';

/** `END <lead> Please dial <code> again.`, without the code when a long one would overflow the screen. */
const dialAgain = (lead: string, serviceCode: string) => {
  const withCode = `END ${lead} Please dial ${serviceCode} again.`;
  return withCode.length <= MAX_REPLY_CHARS ? withCode : `END ${lead} Please dial again.`;
};

export const TEXT = {
  expired: (serviceCode: string) => dialAgain('Your session has expired.', serviceCode),
  ended: (serviceCode: string) => dialAgain('This session has ended.', serviceCode),
  back: '0. Back',
  more: `${MORE}. More`,
  exit: '*. Exit',
};

export const KNOW_MORE_TOPICS: { title: string; body: string }[] = [
  {
    title: 'Clean cookstoves',
    body:
      'A clean cookstove burns fuel more completely than an open fire or an old stove. It cooks as fast with less ' +
      'fuel, makes far less smoke in the kitchen and protects the lungs of everyone at home, children most of all.',
  },
  {
    title: 'Saving fuel',
    body:
      'Dry fuel burns better: keep wood or charcoal under cover. Put a lid on the pot, soak beans before cooking and ' +
      'put out the fire as soon as the food is ready. Every kilogram saved is money and time saved.',
  },
  {
    title: 'The kitchen test (KPT)',
    body:
      'The Kitchen Performance Test measures how much fuel a home uses. Weigh the fuel you use each day and log it ' +
      'here for at least 3 days. Then submit your claim from the Services menu; we verify it and tell you the result.',
  },
];

const NOTICES: Record<Notice['key'], (p: Record<string, string | number>) => string> = {
  invalidChoice: () => 'Invalid choice. Try again.',
  unknownCustomer: () => 'Customer ID not found. Check it and try again.',
  wrongPin: (p) => `Wrong PIN. ${p.left} attempt${p.left === 1 ? '' : 's'} left.`,
  pinFormat: () => 'PIN must be 5 digits.',
  pinTrivial: () => 'PIN too easy. Avoid repeated or consecutive digits.',
  pinMismatch: () => 'PINs did not match. Start again.',
  nameFormat: () => 'Name must be 2-40 letters.',
  villageFormat: () => 'Village must be 2-40 characters.',
  kgFormat: () => 'Enter a positive number of kg, e.g. 2.5',
  fuelSaved: (p) => `Saved ${p.kg} kg for ${p.date}.`,
  fuelUpdated: (p) => `Updated ${p.date} to ${p.kg} kg.`,
  needThreeDays: (p) => `A claim needs at least 3 days logged in a row, not yet claimed (you have ${p.days}).`,
  fuelClaimed: (p) => `${p.date} is already in a submitted claim; not changed.`,
  claimRejected: (p) => `Claim not accepted: ${p.reason}`,
  pinChanged: () => 'PIN changed.',
  noClaim: () => 'No claim submitted yet.',
  loggedIn: (p) => `Welcome, ${p.name}.`,
  noAccountForPhone: () => 'No account for this phone number.',
};

export function noticeText(n: Notice | undefined): string | undefined {
  return n ? NOTICES[n.key](n.params ?? {}) : undefined;
}

/** A screen before pagination: a notice, lines of content and the option lines that end every page. */
export interface Screen {
  end: boolean;
  /** What the last input caused (an invalid choice, a saved reading): first on the page shown. */
  notice?: string;
  lines: string[];
  options?: string[];
}

/** Room a paged screen keeps on every page for a notice: 'Invalid choice. Try again.' and its line break. */
const NOTICE_ROOM = 27;

const numbered = (items: string[]) => items.map((t, i) => `${i + 1}. ${t}`);

export function renderScreen(state: string, c: UssdContext, appName: string): Screen {
  const notice = noticeText(c.notice);
  const con = (lines: string[], options: string[] = [TEXT.back]): Screen => ({ end: false, ...(notice ? { notice } : {}), lines, options });
  const end = (...lines: string[]): Screen => ({ end: true, lines });
  switch (state) {
    case 'preMenu':
      return con(
        [`Welcome to ${appName}`, ...numbered(['Know More', 'Account Menu', ...(c.isAuthenticated ? ['Services'] : [])])],
        [TEXT.exit],
      );
    case 'goodbye':
      return end(`Thank you for using ${appName}. Goodbye.`);
    case 'knowMore':
      return con(['Know More', ...numbered(KNOW_MORE_TOPICS.map((t) => t.title))]);
    case 'knowMoreTopic': {
      const topic = KNOW_MORE_TOPICS[c.topic ?? 0]!;
      return con([topic.title, topic.body]);
    }
    case 'accountMenu':
      return con(['Account Menu', ...numbered(['Log in', 'Create account', 'Forgot Customer ID'])]);
    case 'loginCustomerId':
      return con(['Enter your Customer ID']);
    case 'loginPin':
      return con(['Enter your 5-digit PIN']);
    case 'recoverPin':
      return con(['Enter your 5-digit PIN to see your Customer ID']);
    case 'customerIdShown':
      return end(`Your Customer ID is ${c.customerId}. Keep it and your PIN safe.`);
    case 'locked':
      return end('Your account is locked after 3 wrong PINs. Visit your field agent or programme office to unlock it.');
    case 'createName':
      return con(['Enter your full name']);
    case 'createVillage':
      return con(['Enter your village (optional)'], ['00. Skip', TEXT.back]);
    case 'createGroup':
      return con(['Which stove do you cook on?', ...numbered(['Old stove or open fire', 'New clean stove'])]);
    case 'createPin':
      return con(['Choose a 5-digit PIN']);
    case 'createPinConfirm':
      return con(['Enter the PIN again to confirm']);
    case 'accountCreated':
      return end(`Account created. Your Customer ID is ${c.customerId}. Keep it and your PIN safe. Dial again and log in to record fuel use.`);
    case 'phoneHasAccount':
      return end('This phone number already has an account. Dial again and choose Log in.');
    case 'services':
      return con(['Services', ...numbered(["Log today's fuel", 'Review logged days', 'Submit KPT claim', 'Claim status', 'Change PIN'])]);
    case 'fuelAmount':
      return con(["Enter kg of fuel used today (e.g. 2.5)"]);
    case 'review': {
      const logs = c.review ?? [];
      const total = logs.reduce((s, l) => s + l.kg, 0);
      return con(
        logs.length
          ? [`Logged days: ${logs.length}, total ${round(total)} kg`, ...logs.map((l) => `${l.date}: ${l.kg} kg`)]
          : ['No days logged yet.'],
      );
    }
    case 'claimConfirm': {
      const d = c.claimDraft!;
      return con([`Submit KPT claim for ${d.days} days, total ${d.total} kg?`, '1. Submit']);
    }
    case 'claimSeason':
      return con(['Season during the test?', ...numbered(['Dry', 'Rainy', 'Cold'])]);
    case 'claimEvents':
      return con(['Any special event during the test?', ...numbered(['None', 'Festival or holiday', 'Funeral or ceremony'])]);
    case 'claimWork':
      return con(['Main work of the household?', ...numbered(['Farming', 'Trading', 'Wage work', 'Other'])]);
    case 'claimSubmitted':
      return end(withReason(`Claim submitted. Reference ${c.claimResult?.id}. Status: ${c.claimResult?.status}.`, c.claimResult?.reason, 'END '.length));
    case 'claimStatus':
      return con([
        c.claimResult
          ? withReason(
              `Claim ${c.claimResult.id}: ${c.claimResult.status}${c.claimResult.submittedOn ? ` (${c.claimResult.submittedOn})` : ''}`,
              c.claimResult.reason,
              `CON \n${TEXT.back}`.length,
            )
          : noticeText({ key: 'noClaim' })!,
      ]);
    case 'changePinCurrent':
      return con(['Enter your current PIN']);
    case 'changePinNew':
      return con(['Enter a new 5-digit PIN']);
    case 'changePinConfirm':
      return con(['Enter the new PIN again']);
    default:
      throw new Error(`no screen for state ${state}`);
  }
}

/** Screens that show the customer's own data, as the operator sees them (no dates, amounts or claim ids). */
const OPERATOR_REDACTED: Record<string, string[]> = {
  review: ['Logged days [redacted]'],
  claimConfirm: ['Submit KPT claim [days and total redacted]', '1. Submit'],
  claimStatus: ['Claim status [redacted]'],
};

/**
 * The user's current screen for the operator's debug view (only open sessions are shown): its
 * menu without notices (which carry names, dates and amounts), customer data redacted.
 */
export function operatorScreen(state: string, c: UssdContext, appName: string): string {
  const screen = renderScreen(state, { ...c, notice: undefined }, appName);
  return [...(OPERATOR_REDACTED[state] ?? screen.lines), ...(screen.options ?? [])].join('\n');
}

/** Appends a claim's reason, shortened with `...` so the line and `reserved` characters fit one screen. */
function withReason(line: string, reason: string | undefined, reserved: number): string {
  if (!reason) return line;
  const room = MAX_REPLY_CHARS - reserved - line.length - 1;
  return `${line} ${reason.length <= room ? reason : reason.slice(0, Math.max(0, room - 3)).trimEnd() + '...'}`;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Splits a screen into replies of at most 182 characters. Content that does not fit continues
 * on the next page behind `98. More`; nothing is cut. Returns the page asked for (clamped)
 * and how many pages there are.
 */
export function paginate(screen: Screen, page: number): { reply: string; pages: number } {
  const prefix = screen.end ? 'END ' : 'CON ';
  const options = screen.options ?? [];
  const head = screen.notice ? [screen.notice] : [];
  const whole = prefix + [...head, ...screen.lines, ...options].join('\n');
  if (whole.length <= MAX_REPLY_CHARS) return { reply: whole, pages: 1 };
  // END screens have no way to page; their texts are written to fit.
  if (screen.end) throw new Error(`END screen longer than ${MAX_REPLY_CHARS} characters`);
  const footer = [TEXT.more, ...options].join('\n');
  // Every page keeps room for a notice line, so a notice (an invalid choice on page 3) shows on
  // the page the user is on without moving its content; only a longer notice widens the room.
  const noticeRoom = Math.max(NOTICE_ROOM, screen.notice ? screen.notice.length + 1 : 0);
  const room = MAX_REPLY_CHARS - prefix.length - footer.length - 1 - noticeRoom;
  const chunks = splitWords(screen.lines.join('\n'), room);
  const i = Math.max(0, Math.min(page, chunks.length - 1));
  // Every page but the last offers `98. More`; the last page ends with the options alone.
  const tail = i === chunks.length - 1 ? options : [TEXT.more, ...options];
  return { reply: prefix + [...head, chunks[i]!, ...tail].join('\n'), pages: chunks.length };
}

function splitWords(text: string, room: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const token of text.split(/(?<=[ \n])/)) {
    if ((current + token).trimEnd().length > room && current) {
      chunks.push(current.trimEnd());
      current = '';
    }
    let t = token;
    while (t.trimEnd().length > room) {
      chunks.push(t.slice(0, room));
      t = t.slice(room);
    }
    current += t;
  }
  if (current.trim()) chunks.push(current.trimEnd());
  return chunks;
}
