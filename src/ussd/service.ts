// The USSD session gateway's rules: sessions in the database, cumulative text diffed against
// the last processed text, retries answered from the stored reply, dial shortcuts replayed,
// idle expiry, and the menu machine's effects performed (and awaited) before replying.
import { hash } from 'node:crypto';
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import type { ClaimStatus, KptClaim } from '../../generated/openapi/types.gen.ts';
import { setBounded } from '../platform/bounded-map.ts';
import { DomainError } from '../platform/domain-errors.ts';
import { AppError } from '../platform/http/errors.ts';
import type { Sql } from '../platform/db/sql.ts';
import { isUniqueViolation } from '../platform/db/index.ts';
import { maskPhone, type Logger } from '../platform/logging.ts';
import { FUEL_DAYS, LANGUAGES, type Language, type ReasonKey } from './i18n/index.ts';
import { EFFECT_STATES, ussdMachine, type ClaimView, type EffectResult, type EffectState, type UssdContext } from './machine.ts';
import { operatorScreen, paginate, renderScreen, TEXT } from './menus.ts';
import { PinCipher } from './pin.ts';
import {
  markFuelLogsClaimed, newId, setHouseholdDid, storeClaimRef, UssdRepository, type AccountRow, type FuelLogRow, type SessionEnd, type SessionRow,
} from './repository.ts';

export const MAX_PIN_ATTEMPTS = 3;
export const MIN_CLAIM_DAYS = 3;

export interface UssdRequest {
  sessionId: string;
  serviceCode: string;
  phoneNumber: string;
  text: string;
  /** The mobile network (Africa's Talking `networkCode`), stored on the session. */
  networkCode?: string;
}

/** A claim as area A reports it: `reasonRule` is the rule id of the first reason of a rejected or pending claim. */
export interface ClaimSummary {
  id: string;
  status: ClaimStatus;
  submittedOn?: string;
  reasonRule?: KptClaim['reasons'][number]['rule'];
}

/** What the gateway needs of area A (twins and claims), wired in app.ts. */
export interface UssdTwinsPort {
  /** Creates the household twin entity (controlled by the gateway's principal); its DID. */
  createHousehold(input: {
    name: string;
    village: string | null;
    customerId: string;
    /** Area B's writes that commit with the twin or not at all (see area A's EntityService.create). */
    storeWithHousehold: (sql: Sql, did: string) => Promise<void>;
  }): Promise<{ did: string }>;
  /** Submits a KPT claim through area A's claim service; throws DomainError when area A refuses it. */
  submitKptClaim(input: {
    householdDid: string;
    testGroup: 'reference' | 'intervention';
    dailyLogs: number[];
    total: number;
    externalFactors: { season: string; culturalEvents: string[]; occupationalFactors: string[] };
    startDate: string;
    endDate: string;
    idempotencyKey: string;
    /** Area B's writes that commit with the claim or not at all (see area A's SubmitOptions). */
    storeWithClaim: (sql: Sql, claimId: string) => Promise<void>;
  }): Promise<ClaimSummary>;
  /** The household's most recent claim, if any. */
  latestClaim(householdDid: string): Promise<ClaimSummary | undefined>;
  /** The collection (KPT campaign) claims go to, checked at start-up; undefined if there is none. */
  collection(): Promise<{ id: string; selectionMethod?: string } | undefined>;
}

export interface UssdServiceOptions {
  appName: string;
  idleSeconds: number;
  /** IANA zone of the users' calendar day (fuel is logged for "today" there). */
  timeZone?: string;
  /** The language of a phone without an account. */
  defaultLanguage?: Language;
  /** Fuel amounts (kg a day) outside this range are saved only once the household confirms them. */
  plausibleKg?: { min: number; max: number };
  pins: PinCipher;
  twins: UssdTwinsPort;
  logger: Logger;
  now?: () => Date;
}

export interface SessionDebug {
  sessionId: string;
  state: string;
  context: { sessionId: string; phoneNumber: string; message: string; isAuthenticated: boolean };
}

type Snapshot = SnapshotFrom<typeof ussdMachine>;
/** What a session keeps of the last processed text: a keyed digest and the length, never the text. */
type TextMark = Pick<SessionRow, 'last_text_digest' | 'last_text_length'>;

/** Another instance changed the session while this hop was being computed. */
class LostRace extends Error {}

const CONCURRENT_HOP_WAIT_MS = 3000;
/** Far longer than any hop takes: a hop claimed this long ago without a reply was abandoned (its instance died). */
const ABANDONED_HOP_MS = 30_000;
/** Far longer than any creation takes: an account this old without a household was abandoned. */
const ABANDONED_ACCOUNT_MS = 60_000;
/** Sessions this instance wrote last, to save a read per hop; bounded, oldest evicted first. */
const RECENT_SESSIONS_MAX = 10_000;
/** Outcomes of hops that ran no effect, kept by snapshot and input; bounded, oldest evicted first. */
const PURE_HOPS_MAX = 2_000;

/** What a hop leaves in the session row. */
interface HopOutcome {
  snapshot: string;
  state: string;
  isAuthenticated: boolean;
  reply: string;
  done: boolean;
}

export class UssdService {
  private readonly now: () => Date;
  private readonly localDate: Intl.DateTimeFormat;
  // Only a hint: every write is conditional on the row's version, so a stale entry costs one
  // failed update and a re-read, never a wrong answer.
  private readonly recent = new Map<string, SessionRow>();
  private readonly pureHops = new Map<string, HopOutcome>();
  /** Every session starts in the same state: its persisted snapshot and first screen, built once. */
  private readonly firstScreens: Map<Language, { snapshot: string; state: string; reply: string }>;
  private readonly firstMark: TextMark;

  constructor(
    private readonly repo: UssdRepository,
    private readonly opts: UssdServiceOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
    // en-CA formats a date as YYYY-MM-DD.
    this.localDate = new Intl.DateTimeFormat('en-CA', { timeZone: opts.timeZone ?? 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' });
    this.firstScreens = new Map(
      LANGUAGES.map((lang) => {
        const [first] = initialTransition(ussdMachine, { appName: opts.appName, lang });
        return [lang, { snapshot: JSON.stringify(ussdMachine.getPersistedSnapshot(first)), state: String(first.value), reply: this.render(first) }];
      }),
    );
    this.firstMark = this.textMark('');
  }

  /** Answers one gateway POST with a `CON ...` or `END ...` reply. */
  async handle(req: UssdRequest): Promise<string> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return await this.handleOnce(req, attempt === 0);
      } catch (err) {
        this.recent.delete(req.sessionId);
        if (!(err instanceof LostRace)) throw err;
      }
    }
    throw new AppError(503, 'Service Unavailable', { detail: 'session busy: too many concurrent hops' });
  }

  private async handleOnce(req: UssdRequest, optimistic: boolean): Promise<string> {
    const now = this.now();
    let row = optimistic ? this.recent.get(req.sessionId) : await this.repo.findSession(req.sessionId);
    // A dial of an id this instance does not know is almost always new: insert straight away
    // (a duplicate id fails the insert and the next attempt reads the row).
    if (!row && optimistic && req.text === '') return (await this.startSession(req, now)).last_reply!;
    if (!row && optimistic) row = await this.repo.findSession(req.sessionId);
    // A session belongs to one phone on one service code: another reusing its id gets nowhere
    // near that subscriber's (possibly logged-in) session.
    if (row && (row.phone_number !== req.phoneNumber || row.service_code !== req.serviceCode)) {
      const field = row.phone_number !== req.phoneNumber ? '/body/phoneNumber' : '/body/serviceCode';
      throw new AppError(400, 'Bad Request', {
        detail: 'sessionId belongs to another phone number or service code',
        errors: [{ pointer: field, message: "is not the session's" }],
      });
    }
    let shortcut = false;
    const expired = row && (row.status === 'expired' || (row.status === 'active' && row.expires_at <= now.toISOString()));
    if (row && expired) {
      this.recent.delete(row.id);
      if (req.text !== '') {
        // The row stays (marked) until the sweep: were it deleted, the gateway's retry of this
        // text would look like a dial shortcut and replay every input of the session.
        if (row.status !== 'expired' && !(await this.repo.updateSession(row.id, row.version, { status: 'expired', version: row.version + 1 }))) {
          throw new LostRace();
        }
        return TEXT.expired(row.service_code, languageOf(row));
      }
      // A dial reusing an expired id starts over.
      if (!(await this.repo.deleteSession(row.id, row.version))) throw new LostRace();
      row = undefined;
    }
    if (!row) {
      row = await this.startSession(req, now);
      if (req.text === '') return row.last_reply!;
      shortcut = true;
    }
    const mark = this.textMark(req.text);
    if (row.last_text_length === mark.last_text_length && row.last_text_digest === mark.last_text_digest) return this.storedReply(row);
    if (row.status !== 'active') return TEXT.ended(row.service_code, languageOf(row));

    const inputs = shortcut ? req.text.split('*') : [this.newInput(row, req.text)];
    return this.applyHop(row, req, mark, inputs, now);
  }

  /**
   * What `text` adds to the last processed text (known only by digest and length); when `text`
   * does not extend it, the gateway sent only the latest input and the whole text is the input.
   */
  private newInput(row: SessionRow, text: string): string {
    const len = row.last_text_length;
    if (len === 0) return text;
    const extends_ = text.length > len && text[len] === '*' && this.opts.pins.digest(text.slice(0, len)) === row.last_text_digest;
    return extends_ ? text.slice(len + 1) : text;
  }

  private textMark(text: string): TextMark {
    return { last_text_digest: this.opts.pins.digest(text), last_text_length: text.length };
  }

  private async startSession(req: UssdRequest, now: Date): Promise<SessionRow> {
    // A phone with an account is greeted in the language it chose.
    const account = await this.repo.findAccountByPhone(req.phoneNumber);
    const first = this.firstScreens.get(asLanguage(account?.language) ?? this.opts.defaultLanguage ?? 'en')!;
    const row: SessionRow = {
      id: req.sessionId,
      phone_number: req.phoneNumber,
      service_code: req.serviceCode,
      snapshot: first.snapshot,
      state: first.state,
      is_authenticated: false,
      ...this.firstMark,
      last_reply: first.reply,
      status: 'active',
      version: 1,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      expires_at: this.expiry(now),
      network_code: req.networkCode ?? null,
    };
    try {
      await this.repo.insertSession(row);
      this.remember(row);
      this.opts.logger.info({ sessionId: req.sessionId, phone: maskPhone(req.phoneNumber) }, 'ussd session started');
      return row;
    } catch (err) {
      if (isUniqueViolation(err)) throw new LostRace();
      throw err;
    }
  }

  private async applyHop(row: SessionRow, req: UssdRequest, mark: TextMark, inputs: string[], now: Date): Promise<string> {
    // The machine is pure, so a hop that ran no effect depends only on the stored snapshot and
    // its input: the same menu step taken in another session is answered from memory.
    const pureKey = inputs.length === 1 ? `${row.snapshot}\u0000${inputs[0]}` : undefined;
    const known = pureKey === undefined ? undefined : this.pureHops.get(pureKey);
    if (known) return this.saveHop(row, row.version, mark, known, now);

    // Each hop is computed with xstate's transition functions on the restored snapshot,
    // without starting an actor (the machine's only actions assign context).
    const persisted = JSON.parse(row.snapshot) as Snapshot;
    let snapshot = ussdMachine.resolveState({ value: persisted.value, context: persisted.context });
    let version = row.version;
    // Effects write to the database, so the first one claims the hop: the row's version moves
    // on and a concurrent duplicate of this hop waits for our reply instead of applying it twice.
    let leased = false;
    const lease = async () => {
      if (leased) return;
      const ok = await this.repo.updateSession(row.id, version, { version: version + 1, ...mark, last_reply: null, updated_at: now.toISOString() });
      if (!ok) throw new LostRace();
      version += 1;
      leased = true;
    };
    try {
      for (const value of inputs) {
        if (snapshot.status === 'done') break;
        [snapshot] = transition(ussdMachine, snapshot, { type: 'INPUT', value });
        let state = String(snapshot.value);
        while ((EFFECT_STATES as readonly string[]).includes(state)) {
          await lease();
          const result = await this.runEffect(state as EffectState, snapshot.context, value, row, req);
          [snapshot] = transition(ussdMachine, snapshot, { type: 'DONE', result });
          // Effect states always move on; staying put means an outcome the machine does not handle.
          if (String(snapshot.value) === state) throw new Error(`effect ${state}: unhandled outcome ${result.outcome}`);
          state = String(snapshot.value);
        }
      }
      const outcome: HopOutcome = {
        snapshot: JSON.stringify(ussdMachine.getPersistedSnapshot(snapshot)),
        state: String(snapshot.value),
        isAuthenticated: snapshot.context.isAuthenticated,
        reply: this.render(snapshot),
        done: snapshot.status === 'done',
      };
      if (pureKey !== undefined && !leased) setBounded(this.pureHops, pureKey, outcome, PURE_HOPS_MAX);
      return await this.saveHop(row, version, mark, outcome, now);
    } catch (err) {
      // Give the hop back so the gateway's retry can apply it; the effects that ran are idempotent or counted on the account.
      if (leased && !(err instanceof LostRace)) {
        await this.repo.updateSession(row.id, version, { last_text_digest: row.last_text_digest, last_text_length: row.last_text_length, last_reply: row.last_reply, version: version + 1 }).catch(() => undefined);
      }
      throw err;
    }
  }

  /** Stores a hop's outcome if the row still has `version`; its reply. */
  private async saveHop(row: SessionRow, version: number, mark: TextMark, outcome: HopOutcome, now: Date): Promise<string> {
    const changes: Partial<SessionRow> = {
      snapshot: outcome.snapshot,
      state: outcome.state,
      is_authenticated: outcome.isAuthenticated,
      ...mark,
      last_reply: outcome.reply,
      status: outcome.done ? 'closed' : 'active',
      version: version + 1,
      updated_at: now.toISOString(),
      expires_at: this.expiry(now),
    };
    if (!(await this.repo.updateSession(row.id, version, changes))) throw new LostRace();
    if (outcome.done) this.recent.delete(row.id);
    else this.remember({ ...row, ...changes });
    return outcome.reply;
  }

  /** A retry of the last hop: its stored reply, or (while another instance still works on it) that reply once ready. */
  private async storedReply(row: SessionRow): Promise<string> {
    if (row.last_reply === null && Date.parse(row.updated_at) <= this.now().getTime() - ABANDONED_HOP_MS) return this.endAbandonedHop(row);
    const deadline = Date.now() + CONCURRENT_HOP_WAIT_MS;
    let current: SessionRow | undefined = row;
    while (current && current.last_reply === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      current = await this.repo.findSession(row.id);
    }
    if (!current) return TEXT.ended(row.service_code, languageOf(row));
    if (current.last_reply === null) throw new AppError(503, 'Service Unavailable', { detail: 'concurrent hop did not finish' });
    if (current.last_text_digest !== row.last_text_digest) throw new LostRace();
    return current.last_reply;
  }

  /**
   * A hop claimed long ago and never finished: the instance working on it died. What it did
   * cannot be told, so the session ends (the user dials again) instead of answering every
   * retry "unavailable" after a wait.
   */
  private async endAbandonedHop(row: SessionRow): Promise<string> {
    const now = this.now();
    const reply = TEXT.ended(row.service_code, languageOf(row));
    const closed = { status: 'closed' as const, last_reply: reply, version: row.version + 1, updated_at: now.toISOString(), expires_at: this.expiry(now) };
    if (!(await this.repo.updateSession(row.id, row.version, closed))) throw new LostRace();
    this.recent.delete(row.id);
    this.opts.logger.warn({ sessionId: row.id, phone: maskPhone(row.phone_number) }, 'ussd session ended: its last hop was abandoned mid-way');
    return reply;
  }

  private remember(row: SessionRow): void {
    setBounded(this.recent, row.id, row, RECENT_SESSIONS_MAX);
  }

  private render(snapshot: Snapshot): string {
    const state = String(snapshot.value);
    return paginate(renderScreen(state, snapshot.context, this.opts.appName), snapshot.context.page).reply;
  }

  private expiry(now: Date): string {
    return new Date(now.getTime() + this.opts.idleSeconds * 1000).toISOString();
  }

  /** The local calendar date `daysBefore` days before today (noon UTC steps days without DST edge cases). */
  private localDay(daysBefore: number): string {
    const today = this.localDate.format(this.now());
    return new Date(Date.parse(`${today}T12:00:00Z`) - daysBefore * DAY_MS).toISOString().slice(0, 10);
  }

  // ---- effects ---------------------------------------------------------------------------------
  private async runEffect(state: EffectState, c: UssdContext, value: string, row: SessionRow, req: UssdRequest): Promise<EffectResult> {
    const nowIso = this.now().toISOString();
    const { pins } = this.opts;
    switch (state) {
      case 'verifyingLogin': {
        const account = await this.repo.findAccountByCustomerId(c.draft.customerId ?? '');
        if (!account) return { outcome: 'unknownCustomer' };
        const check = await this.checkPin(account.id, value);
        if (check.outcome !== 'ok') return check;
        return {
          outcome: 'ok',
          assign: { accountId: account.id, customerId: account.customer_id, lang: asLanguage(account.language) ?? c.lang },
          notice: { key: 'loggedIn', params: { name: account.name.split(' ')[0]! } },
        };
      }
      case 'recoveringCustomerId': {
        // An account whose creation has not finished has no Customer ID to give yet.
        const account = await this.repo.findAccountByPhone(row.phone_number);
        if (!account?.household_did) return { outcome: 'unknownCustomer' };
        const check = await this.checkPin(account.id, value);
        if (check.outcome !== 'ok') return check;
        this.opts.logger.info({ sessionId: row.id, customerId: account.customer_id }, 'ussd customer id shown again');
        return { outcome: 'ok', assign: { customerId: account.customer_id } };
      }
      case 'checkingPhone': {
        const existing = await this.repo.findAccountByPhone(row.phone_number);
        if (existing && !(await this.removeAbandonedAccount(existing, nowIso))) return { outcome: 'phoneTaken' };
        return { outcome: 'ok' };
      }
      case 'savingLanguage':
        // Kept on the phone's account (logged in or not: the account is the phone's) for later sessions.
        await this.repo.setLanguage(c.accountId ? { id: c.accountId } : { phone_number: row.phone_number }, c.lang, nowIso);
        return { outcome: 'ok' };
      case 'verifyingCurrentPin':
        return this.checkPin(c.accountId!, value);
      case 'sealingPin':
        return { outcome: 'ok', assign: { draft: { ...c.draft, sealedPin: pins.seal(value) } } };
      case 'sealingNewPin':
        return { outcome: 'ok', assign: { draft: { sealedPin: pins.seal(value) } } };
      case 'creatingAccount':
        return this.createAccount(c, value, row.phone_number, nowIso);
      case 'savingNewPin': {
        if (!c.draft.sealedPin || !pins.matches(c.draft.sealedPin, value)) return { outcome: 'mismatch' };
        await this.repo.updatePin(c.accountId!, pins.seal(value), nowIso);
        this.opts.logger.info({ sessionId: row.id }, 'ussd PIN changed');
        return { outcome: 'ok' };
      }
      case 'checkingFuel':
      case 'savingFuel': {
        const kg = c.pendingKg!;
        const day = Math.min(Math.max(c.fuelDay ?? 0, 0), FUEL_DAYS - 1);
        const range = this.opts.plausibleKg;
        if (state === 'checkingFuel' && range && (kg < range.min || kg > range.max)) return { outcome: 'confirm', assign: { unusualKg: kg > range.max ? 'high' : 'low' } };
        const saved = await this.repo.upsertFuelLog(c.accountId!, this.localDay(day), kg, nowIso);
        const key = saved === 'saved' ? 'fuelSaved' : saved === 'updated' ? 'fuelUpdated' : 'fuelClaimed';
        return { outcome: 'ok', notice: { key, params: { kg, day } } };
      }
      case 'loadingReview': {
        const logs = await this.repo.fuelLogs(c.accountId!);
        return { outcome: 'ok', assign: { review: logs.map((l) => ({ date: l.log_date, kg: l.kg })) } };
      }
      case 'preparingClaim': {
        const logs = latestUnclaimedRun(await this.repo.fuelLogs(c.accountId!));
        if (logs.length < MIN_CLAIM_DAYS) return { outcome: 'tooFew', notice: { key: 'needThreeDays', params: { days: logs.length } } };
        return { outcome: 'ok', assign: { claimDraft: { days: logs.length, total: sum(logs.map((l) => l.kg)) } } };
      }
      case 'submittingClaim':
        return this.submitClaim(c, req);
      case 'loadingClaimStatus': {
        const account = await this.repo.findAccount(c.accountId!);
        const latest = account?.household_did ? await this.opts.twins.latestClaim(account.household_did) : undefined;
        if (!latest) return { outcome: 'ok' };
        // Again here, should the release after submission not have happened (the process stopped).
        if (latest.status === 'rejected') await this.repo.releaseFuelLogs(account!.id, latest.id, nowIso);
        return { outcome: 'ok', assign: { claimResult: claimView(latest) } };
      }
    }
  }

  /** Constant-time PIN check with the attempt counter and lock stored on the account. */
  private async checkPin(accountId: string, pin: string): Promise<EffectResult> {
    const account = await this.repo.findAccount(accountId);
    if (!account) return { outcome: 'unknownCustomer' };
    if (account.locked_at) return { outcome: 'locked' };
    const nowIso = this.now().toISOString();
    // The attempt is counted before the PIN is compared: concurrent guesses (other sessions,
    // other instances) get no more than MAX_PIN_ATTEMPTS comparisons between them.
    const attempts = await this.repo.reservePinAttempt(account.id, MAX_PIN_ATTEMPTS, nowIso);
    if (attempts === undefined) return { outcome: 'locked' };
    if (this.opts.pins.matches(account.pin_encrypted, pin)) {
      await this.repo.resetFailedPins(account.id, nowIso);
      return { outcome: 'ok' };
    }
    this.opts.logger.warn({ customerId: account.customer_id, attempts }, 'ussd wrong PIN');
    if (attempts >= MAX_PIN_ATTEMPTS) {
      await this.repo.lockAccount(account.id, nowIso);
      return { outcome: 'locked' };
    }
    return { outcome: 'retry', notice: { key: 'wrongPin', params: { left: MAX_PIN_ATTEMPTS - attempts } } };
  }

  private async createAccount(c: UssdContext, confirmPin: string, phone: string, nowIso: string): Promise<EffectResult> {
    const { draft } = c;
    if (!draft.sealedPin || !this.opts.pins.matches(draft.sealedPin, confirmPin)) return { outcome: 'mismatch' };
    const existing = await this.repo.findAccountByPhone(phone);
    if (existing && !(await this.removeAbandonedAccount(existing, nowIso))) return { outcome: 'phoneTaken' };
    for (let attempt = 0; attempt < 5; attempt++) {
      const customerId = String(10_000_000 + Math.floor(Math.random() * 90_000_000));
      if (await this.repo.findAccountByCustomerId(customerId)) continue;
      const accountId = newId();
      try {
        await this.repo.insertAccount({
          id: accountId,
          customer_id: customerId,
          phone_number: phone,
          name: draft.name!,
          village: draft.village ?? null,
          test_group: draft.testGroup!,
          language: c.lang,
          household_did: null,
          // Re-sealed with a fresh IV: the draft's ciphertext lived in session state.
          pin_encrypted: this.opts.pins.seal(confirmPin),
          failed_pin_attempts: 0,
          locked_at: null,
          created_at: nowIso,
          updated_at: nowIso,
        });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        if (await this.repo.findAccountByPhone(phone)) return { outcome: 'phoneTaken' };
        continue;
      }
      // The household twin only once the account row holds its customer id and phone: a
      // unique-key retry above never leaves a household behind. The twin and the account's link
      // to it commit together, and a failure removes the row.
      let household: { did: string };
      try {
        household = await this.opts.twins.createHousehold({
          name: draft.name!,
          village: draft.village ?? null,
          customerId,
          storeWithHousehold: (sql, did) => setHouseholdDid(sql, accountId, did, nowIso),
        });
      } catch (err) {
        await this.repo.deleteAccount(accountId).catch((e) => this.opts.logger.error({ err: e, customerId }, 'ussd could not remove a half-created account'));
        throw err;
      }
      this.opts.logger.info({ customerId, householdDid: household.did, phone: maskPhone(phone) }, 'ussd account created');
      return { outcome: 'ok', assign: { customerId } };
    }
    throw new Error('could not allocate a unique customer id');
  }

  /**
   * An account row without a household DID long after it was inserted is a creation that died
   * between the two (a crash: the compensating delete never ran). Its Customer ID was never
   * shown, so it is removed and the phone may create an account again. True if it was removed.
   */
  private async removeAbandonedAccount(account: AccountRow, nowIso: string): Promise<boolean> {
    if (account.household_did !== null || Date.parse(nowIso) - Date.parse(account.created_at) < ABANDONED_ACCOUNT_MS) return false;
    const removed = await this.repo.deleteUnfinishedAccount(account.id);
    if (removed) this.opts.logger.warn({ customerId: account.customer_id, phone: maskPhone(account.phone_number) }, 'ussd removed an account whose creation never finished');
    return removed;
  }

  private async submitClaim(c: UssdContext, req: UssdRequest): Promise<EffectResult> {
    const account = await this.repo.findAccount(c.accountId!);
    if (!account?.household_did) return { outcome: 'rejected', notice: { key: 'claimNotSent', params: { reason: 'other' } } };
    const logs = latestUnclaimedRun(await this.repo.fuelLogs(account.id));
    if (logs.length < MIN_CLAIM_DAYS) return { outcome: 'tooFew', notice: { key: 'needThreeDays', params: { days: logs.length } } };
    const total = sum(logs.map((l) => l.kg));
    const startDate = logs[0]!.log_date;
    const endDate = logs[logs.length - 1]!.log_date;
    let claim: ClaimSummary;
    const request = {
      householdDid: account.household_did,
      testGroup: account.test_group,
      dailyLogs: logs.map((l) => l.kg),
      total,
      externalFactors: {
        season: c.claimFactors?.season ?? 'not stated',
        culturalEvents: [c.claimFactors?.culturalEvents ?? 'none'],
        occupationalFactors: [c.claimFactors?.occupation ?? 'not stated'],
      },
      startDate,
      endDate,
    };
    try {
      // The same request again (a retry) carries the same key and yields the same claim. The key
      // covers the whole request, as area A compares whole requests: the same days with other
      // answers are a new request, which area A answers with the stored claim as an identical
      // resubmission (or a correction of it).
      claim = await this.opts.twins.submitKptClaim({
        ...request,
        idempotencyKey: `ussd-${hash('sha256', JSON.stringify(request), 'hex')}`,
        // The days and the claim's short reference are stored in the claim's transaction: a claim
        // is never stored with its days left open for another claim, nor with readings another
        // session changed meanwhile.
        storeWithClaim: async (sql, claimId) => {
          const now = this.now().toISOString();
          if (!(await markFuelLogsClaimed(sql, logs, claimId, now))) throw new ReadingChanged();
          await storeClaimRef(sql, claimRef(claimId), claimId, account.id, now);
        },
      });
    } catch (err) {
      const reason = refusalReason(err);
      if (!reason) throw err;
      // The household reads a plain reason; the operator's detail goes to the log.
      this.opts.logger.warn(
        { customerId: account.customer_id, reason, refusal: (err as DomainError).kind, detail: (err as DomainError).message, issues: (err as DomainError).issues },
        'ussd claim refused',
      );
      return { outcome: 'rejected', notice: { key: 'claimNotSent', params: { reason } } };
    }
    if (claim.status === 'rejected') {
      // Days of a claim that was not accepted are free again: once the cause is fixed (answers,
      // the programme's set-up) the household sends them again.
      await this.repo.releaseFuelLogs(account.id, claim.id, this.now().toISOString());
      this.opts.logger.warn({ customerId: account.customer_id, claimId: claim.id, rule: claim.reasonRule }, 'ussd claim not accepted; its days are released');
    }
    return { outcome: 'ok', assign: { claimResult: claimView(claim) } };
  }

  /** Records the gateway's end-of-session notification on the session; false for an unknown session. */
  async recordSessionEnd(sessionId: string, end: { status: string; durationMs?: number; error?: string }): Promise<boolean> {
    const recorded: SessionEnd = {
      end_status: end.status,
      end_duration_ms: end.durationMs ?? null,
      end_error: end.error ?? null,
      ended_at: this.now().toISOString(),
    };
    const found = await this.repo.recordSessionEnd(sessionId, recorded);
    this.opts.logger.info({ sessionId, status: end.status, durationMs: end.durationMs, error: end.error, found }, 'ussd session end notified');
    return found;
  }

  // ---- operator views -------------------------------------------------------------------------
  async debug(sessionId: string): Promise<SessionDebug | undefined> {
    const row = await this.repo.findSession(sessionId);
    if (!row || row.status !== 'active' || row.expires_at <= this.now().toISOString()) return undefined;
    return {
      sessionId: row.id,
      state: row.state,
      context: {
        sessionId: row.id,
        phoneNumber: maskPhone(row.phone_number),
        message: operatorScreen(row.state, (JSON.parse(row.snapshot) as Snapshot).context, this.opts.appName),
        isAuthenticated: Boolean(row.is_authenticated),
      },
    };
  }

  activeSessions(): Promise<string[]> {
    return this.repo.activeSessionIds(this.now().toISOString());
  }

  /**
   * Removes sessions closed one idle period ago (their expiry is set at the closing hop) and
   * sessions idle for twice the idle time: a closed or expired session stays one more idle
   * period, so a gateway's retry of its last hop still gets the stored reply (or the expired
   * one) instead of replaying the session as a dial shortcut.
   */
  sweep(): Promise<number> {
    const now = this.now();
    return this.repo.sweepSessions(now.toISOString(), new Date(now.getTime() - this.opts.idleSeconds * 1000).toISOString());
  }
}

const DAY_MS = 86_400_000;

/** A reading changed (or went to another claim) between reading the days and storing the claim. */
class ReadingChanged extends Error {}

const asLanguage = (code: string | undefined): Language | undefined => LANGUAGES.find((l) => l === code);
/** The language a session's screens are in. */
const languageOf = (row: SessionRow): Language => asLanguage((JSON.parse(row.snapshot) as { context?: { lang?: string } }).context?.lang) ?? 'en';

/** Letters and digits that cannot be mistaken for one another when read out (no 0/O, 1/I/L, 2/Z, 5/S, 8/B). */
const REF_ALPHABET = 'ACDEFGHJKMNPQRTUVWXY3479';
export const CLAIM_REF_LENGTH = 8;

/** The short reference of a claim: 8 characters derived from its id (24^8, about 10^11 values). */
export function claimRef(claimId: string): string {
  let n = BigInt(`0x${hash('sha256', claimId, 'hex')}`);
  let ref = '';
  for (let i = 0; i < CLAIM_REF_LENGTH; i++) {
    ref += REF_ALPHABET[Number(n % BigInt(REF_ALPHABET.length))];
    n /= BigInt(REF_ALPHABET.length);
  }
  return ref;
}

/** Why a claim is waiting or was not accepted, from the rule area A reported. */
const RULE_REASONS = new Map<string, ReasonKey>([
  ['control-group-present', 'waitingOtherGroup'],
  ['timing-aligned', 'waitingOtherGroup'],
  ['random-selection-verified', 'notReady'],
  ['seasonal-variations-documented', 'answersMissing'],
  ['external-factors-documented', 'answersMissing'],
  ['collection-exists', 'notReady'],
  ['no-overlapping-claim', 'daysInOtherClaim'],
  ['household-single-group', 'otherGroup'],
]);

function claimView(claim: ClaimSummary): ClaimView {
  return {
    ref: claimRef(claim.id),
    status: claim.status,
    ...(claim.submittedOn ? { submittedOn: claim.submittedOn } : {}),
    ...(claim.reasonRule ? { reason: RULE_REASONS.get(claim.reasonRule) ?? 'other' } : {}),
  };
}

/** The plain reason for a submission area A refused, or undefined for a failure (the database, a bug). */
function refusalReason(err: unknown): ReasonKey | undefined {
  if (err instanceof ReadingChanged) return 'readingChanged';
  if (!(err instanceof DomainError)) return undefined;
  const known = err.issues.map((e) => RULE_REASONS.get(e.rule ?? '')).find((r) => r !== undefined);
  return known ?? 'other';
}

/** The most recent run of consecutive days not yet used by a claim (logs sorted by date). */
function latestUnclaimedRun(logs: FuelLogRow[]): FuelLogRow[] {
  const unclaimed = logs.filter((l) => !l.claim_id);
  let start = unclaimed.length - 1;
  while (start > 0 && Date.parse(unclaimed[start]!.log_date) - Date.parse(unclaimed[start - 1]!.log_date) === DAY_MS) start--;
  return unclaimed.slice(Math.max(start, 0));
}

const sum = (xs: number[]) => Math.round(xs.reduce((s, x) => s + x, 0) * 1000) / 1000;
