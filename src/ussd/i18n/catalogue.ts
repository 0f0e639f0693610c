// What a catalogue (one per language) must say. Every household-facing word lives in a
// catalogue; the type makes a language that misses a text fail to compile.
import type { ClaimStatus } from '../../../generated/openapi/types.gen.ts';
import { USSD_LANGUAGES } from '../../config.ts';

/** The languages a catalogue exists for (config.ts names them: USSD_DEFAULT_LANGUAGE is one). */
export const LANGUAGES = USSD_LANGUAGES;
export type Language = (typeof LANGUAGES)[number];

/** Why a claim is waiting or was not accepted, in words a household understands. */
export type ReasonKey =
  | 'waitingOtherGroup' | 'notReady' | 'answersMissing' | 'daysInOtherClaim' | 'otherGroup' | 'readingChanged' | 'other';

/** The days a household may log fuel for: today, yesterday, the day before. */
export const FUEL_DAYS = 3;

/** Items as a sentence lists them: `a`, `a and b`, `a, b and c` (`and` in the catalogue's language). */
export const listed = (items: string[], and: string): string => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} ${and} ${items.at(-1)}`);

export interface Catalogue {
  /** The language's own name, as listed on the language screen. */
  name: string;
  welcome: (app: string) => string;
  goodbye: (app: string) => string;
  home: { knowMore: string; account: string; services: string; language: string; exit: string };
  back: string;
  more: string;
  skip: string;
  chooseLanguage: string;
  knowMore: string;
  topics: { title: string; body: string }[];
  accountMenu: string;
  accountOptions: [login: string, create: string, forgotId: string];
  enterCustomerId: string;
  enterPin: string;
  recoverPin: string;
  customerIdShown: (id: string) => string;
  locked: string;
  enterName: string;
  enterVillage: string;
  whichStove: string;
  stoves: [old: string, clean: string];
  choosePin: string;
  confirmPin: string;
  accountCreated: (id: string) => string;
  services: string;
  serviceOptions: [logFuel: string, review: string, submit: string, status: string, changePin: string];
  whichDay: string;
  /** Today, yesterday, the day before (FUEL_DAYS entries). */
  days: string[];
  /** The months' names, January first: dates are shown as a day and a month ("24 November"). */
  months: string[];
  enterKg: (day: string) => string;
  /** Asks to confirm an amount above (`high`) or below the plausible range. */
  confirmKg: (kg: number, day: string, high: boolean) => string;
  confirmOptions: [yes: string, no: string];
  review: (days: number, totalKg: number) => string;
  /** One logged day on the review screen. */
  dayLine: (date: string, kg: number) => string;
  noDays: string;
  claimConfirm: (days: number, totalKg: number) => string;
  send: string;
  season: string;
  seasons: [dry: string, rainy: string, cold: string];
  events: string;
  eventOptions: [none: string, festival: string, funeral: string];
  work: string;
  workOptions: [farming: string, trading: string, wageWork: string, other: string];
  claimSent: (ref: string, status: string) => string;
  claimStatus: (ref: string, status: string, date?: string) => string;
  statuses: Record<ClaimStatus, string>;
  reasons: Record<ReasonKey, string>;
  noClaim: string;
  currentPin: string;
  newPin: string;
  newPinAgain: string;
  notices: {
    invalidChoice: string;
    unknownCustomer: string;
    wrongPin: (left: number) => string;
    /** Every attempt the account has left is being checked in other sessions. */
    pinBusy: string;
    pinFormat: string;
    pinTrivial: string;
    pinMismatch: string;
    nameFormat: string;
    villageFormat: string;
    /** Refused kg: what to type, up to the most a day may hold. */
    kgFormat: (max: number) => string;
    fuelSaved: (kg: number, day: string) => string;
    fuelUpdated: (kg: number, day: string) => string;
    fuelClaimed: (day: string) => string;
    dayClaimed: (day: string) => string;
    /**
     * What to log before a claim can be sent: the days still missing (names as in `days`, oldest
     * first), how many days from tomorrow on (after a claim, whose days count once), and whether
     * some days of that claim are logged already.
     */
    logDays: (days: string[], fromTomorrow: number, someLogged: boolean) => string;
    claimNotSent: (reason: string) => string;
    pinChanged: string;
    pinUnchanged: string;
    /** The household's first name; none when it cannot be written in the GSM alphabet. */
    loggedIn: (name: string | undefined) => string;
    noAccountForPhone: string;
    /** Account creation met the phone's account: the household is taken to log in instead. */
    phoneHasAccount: string;
    languageSet: string;
  };
  /**
   * Replies to a hop that cannot be served: its request is invalid, the service is down, or the
   * phone is over its rate limit. No account is known then, so they are in USSD_DEFAULT_LANGUAGE
   * (English words them as the interface specification does).
   */
  failures: { invalidInput: string; unavailable: string; tooManyRequests: string };
  /** Gateway replies: the session ended or expired; `code` is the service code to dial. */
  expired: string;
  ended: string;
  dialAgain: (code: string) => string;
  dialAgainShort: string;
}
