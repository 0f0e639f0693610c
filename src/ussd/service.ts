// The USSD session gateway's hop rules: the cumulative text diffed against the last processed
// text, retries answered from the stored reply, dial shortcuts replayed, idle expiry, a session
// bound to its phone and service code, and hops that lose a race with another hop started over.
// The session store keeps the sessions, the menu runner computes each hop (and its effects).
import type { UssdDebugResponse, UssdRequest } from '../../generated/openapi/types.gen.ts';
import { setBounded } from '../platform/bounded-map.ts';
import { maskPhone } from '../platform/logging.ts';
import { createEffects, localDateFormat, localDay } from './effects.ts';
import type { EffectDeps } from './effect-deps.ts';
import { SessionBusyError, SessionMismatchError } from './errors.ts';
import { asLanguage, type Language } from './i18n/index.ts';
import type { UssdContext } from './context.ts';
import { operatorScreen, TEXT } from './menus.ts';
import { MenuRunner } from './menu-runner.ts';
import type { Session, TextMark } from './model.ts';
import type { UssdRepository } from './repository.ts';
import { SessionStore } from './session-store.ts';

export interface UssdServiceOptions extends Omit<EffectDeps, 'repo' | 'now'> {
  appName: string;
  idleSeconds: number;
  /** The language of a phone without an account. */
  defaultLanguage?: Language;
  now?: () => Date;
  /** The pause between reads of a session another instance is working on (tests). */
  pause?: (ms: number) => Promise<unknown>;
}

/** What the operator's debug view shows of an open session. */
export type SessionDebug = Pick<UssdDebugResponse, 'sessionId'> & Omit<UssdDebugResponse['debugInfo'], 'status'>;

/** Far longer than any hop takes: a hop claimed this long ago without a reply was abandoned (its instance died). */
const ABANDONED_HOP_MS = 30_000;
/** Attempts at a hop that keeps losing races with other hops on its session. */
const HOP_ATTEMPTS = 5;

/** A hop lost a race with another hop on its session: it is started over on a fresh read. */
const LOST = Symbol('lost race');
type Attempt = string | typeof LOST;

/** The language of the screens of a session, by its snapshot. */
const languageOfSnapshot = (snapshot: string): Language => asLanguage((JSON.parse(snapshot) as { context?: Partial<UssdContext> }).context?.lang) ?? 'en';
const languageOf = (s: Session): Language => languageOfSnapshot(s.snapshot);

/** The longest network code a session records (MCC+MNC is 5 or 6 digits). */
const NETWORK_CODE_MAX = 16;

/** The gateway's network code as the session records it: text or a whole number as text, else (none, too long, another type) null. */
function recordedNetworkCode(code: unknown): string | null {
  const text = typeof code === 'string' ? code : Number.isSafeInteger(code) ? String(code) : '';
  return text !== '' && text.length <= NETWORK_CODE_MAX ? text : null;
}

/** How long the id of a swept session is remembered: far longer than any gateway retries a hop. */
const SWEPT_SESSION_MEMORY_MS = 86_400_000;

/** Sessions whose language an instance remembers for failure replies: far more than are open at once. */
const REMEMBERED_LANGUAGES = 10_000;

export class UssdService {
  private readonly now: () => Date;
  private readonly localDate: Intl.DateTimeFormat;
  readonly sessions: SessionStore;
  readonly menus: MenuRunner;
  /** The language of sessions this instance served lately, by id: a hop that fails is answered in it (reply.ts). */
  private readonly languages = new Map<string, Language>();

  constructor(
    private readonly repo: UssdRepository,
    private readonly opts: UssdServiceOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
    this.localDate = localDateFormat(opts.timeZone);
    this.sessions = new SessionStore(repo, { pins: opts.pins, idleSeconds: opts.idleSeconds, pause: opts.pause });
    this.menus = new MenuRunner(opts.appName, createEffects({ ...opts, repo, now: this.now }));
  }

  /** The language of a session this instance served lately (a hop's `sessionId`, as the gateway sent it). */
  sessionLanguage(sessionId: unknown): Language | undefined {
    return typeof sessionId === 'string' ? this.languages.get(sessionId) : undefined;
  }

  private noteLanguage(sessionId: string, language: Language): void {
    setBounded(this.languages, sessionId, language, REMEMBERED_LANGUAGES);
  }

  /** Answers one gateway POST with a `CON ...` or `END ...` reply. */
  async handle(req: UssdRequest): Promise<string> {
    for (let attempt = 0; attempt < HOP_ATTEMPTS; attempt++) {
      const reply = await this.attempt(req, attempt === 0).catch((err: unknown) => {
        this.sessions.forget(req.sessionId);
        throw err;
      });
      if (reply !== LOST) return reply;
      this.sessions.forget(req.sessionId);
    }
    throw new SessionBusyError('session busy: too many concurrent hops');
  }

  private async attempt(req: UssdRequest, optimistic: boolean): Promise<Attempt> {
    const now = this.now();
    let session = optimistic ? this.sessions.remembered(req.sessionId) : await this.sessions.find(req.sessionId);
    // A dial of an id this instance does not know is almost always new: insert straight away
    // (a duplicate id fails the insert and the next attempt reads the row).
    if (!session && optimistic && req.text === '') return this.dial(req, now);
    if (!session && optimistic) session = await this.sessions.find(req.sessionId);
    // A session belongs to one phone on one service code: another reusing its id gets nowhere
    // near that subscriber's (possibly logged-in) session.
    if (session && session.phoneNumber !== req.phoneNumber) throw new SessionMismatchError('phoneNumber');
    if (session && session.serviceCode !== req.serviceCode) throw new SessionMismatchError('serviceCode');
    if (session) this.noteLanguage(session.id, languageOf(session));
    if (session && (session.status === 'expired' || (session.status === 'active' && session.expiresAt <= now.toISOString()))) {
      if (req.text !== '') {
        // The row stays (marked) until the sweep: were it deleted, the gateway's retry of this
        // text would look like a dial shortcut and replay every input of the session.
        return (await this.sessions.expire(session)) ? TEXT.expired(session.serviceCode, languageOf(session)) : LOST;
      }
      // A dial reusing an expired id starts over.
      if (!(await this.sessions.remove(session))) return LOST;
      session = undefined;
    }
    if (!session) {
      if (req.text === '') return this.dial(req, now);
      // A late retry of a hop of a session the sweep removed: expired, not replayed.
      const swept = await this.repo.findSweptSession(req.sessionId);
      if (swept) return TEXT.expired(swept.serviceCode, swept.language);
      // A dial shortcut (`*384*1*2#`): a new session with every input of the text replayed.
      const started = await this.start(req, now);
      return started ? this.apply(started, req, this.sessions.markOfHop(req.text), req.text.split('*'), now) : LOST;
    }
    const mark = this.sessions.markOf(req.text);
    if (session.lastText.length === mark.length && session.lastText.digest === mark.digest) return this.storedReply(session);
    if (session.status !== 'active') return TEXT.ended(session.serviceCode, languageOf(session));
    // A late repeat of an earlier hop (the gateway retrying it after later ones went through)
    // is no keypress: it changes nothing and gets the screen the session is on.
    if (this.sessions.isEarlierText(session, req.text)) return this.storedReply(session);
    return this.apply(session, req, this.sessions.markOfHop(req.text), [this.newInput(session, req.text)], now);
  }

  /**
   * What `text` adds to the last processed text (known only by digest and length); when `text`
   * does not extend it, the gateway sent only the latest input and the whole text is the input.
   */
  private newInput(s: Session, text: string): string {
    const len = s.lastText.length;
    if (len === 0) return text;
    const extends_ = text.length > len && text[len] === '*' && this.sessions.markOf(text.slice(0, len)).digest === s.lastText.digest;
    return extends_ ? text.slice(len + 1) : text;
  }

  /** A new session on the welcome screen, in the language the phone's account chose; undefined if another hop stored one first. */
  private async start(req: UssdRequest, now: Date): Promise<Session | undefined> {
    const account = await this.repo.findAccountByPhone(req.phoneNumber);
    const first = this.menus.first(asLanguage(account?.language) ?? this.opts.defaultLanguage ?? 'en');
    const session: Session = {
      id: req.sessionId,
      phoneNumber: req.phoneNumber,
      serviceCode: req.serviceCode,
      snapshot: first.snapshot,
      state: first.state,
      isAuthenticated: false,
      lastText: this.sessions.markOf(''),
      lastReply: first.reply,
      status: 'active',
      version: 1,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      expiresAt: this.sessions.expiry(now),
      networkCode: recordedNetworkCode(req.networkCode),
    };
    if (!(await this.sessions.insert(session))) return undefined;
    this.noteLanguage(session.id, languageOf(session));
    this.opts.logger.info({ sessionId: req.sessionId, phone: maskPhone(req.phoneNumber) }, 'ussd session started');
    return session;
  }

  private async dial(req: UssdRequest, now: Date): Promise<Attempt> {
    return (await this.start(req, now))?.lastReply ?? LOST;
  }

  /** Runs the inputs through the menus and stores the outcome; the effects run under the hop's lease. */
  private async apply(session: Session, req: UssdRequest, mark: TextMark, inputs: string[], now: Date): Promise<Attempt> {
    const lease = this.sessions.lease(session, mark, now);
    try {
      const today = localDay(this.localDate, now, 0);
      const outcome = await this.menus.run({ snapshot: session.snapshot, inputs, today, sessionId: session.id, phoneNumber: req.phoneNumber, beforeEffect: () => lease.take() });
      if (!outcome) return LOST;
      if (!(await this.sessions.saveHop(session, lease.version, mark, outcome, now))) return LOST;
      // The hop may have changed the language (the language menu).
      this.noteLanguage(session.id, outcome.language);
      return outcome.reply;
    } catch (err) {
      await lease.giveBack();
      throw err;
    } finally {
      lease.end();
    }
  }

  /** A retry of the last hop: its stored reply, or (while another hop still works on it) that reply once ready. */
  private async storedReply(s: Session): Promise<Attempt> {
    if (s.lastReply === null && Date.parse(s.updatedAt) <= this.now().getTime() - ABANDONED_HOP_MS) return this.endAbandonedHop(s);
    const current = await this.sessions.awaitReply(s);
    if (!current) return TEXT.ended(s.serviceCode, languageOf(s));
    if (current.lastReply === null) throw new SessionBusyError('concurrent hop did not finish');
    if (current.lastText.digest !== s.lastText.digest) return LOST;
    return current.lastReply;
  }

  /**
   * A hop claimed long ago and never finished: the instance working on it died. What it did
   * cannot be told, so the session ends (the user dials again) instead of answering every
   * retry "unavailable" after a wait.
   */
  private async endAbandonedHop(s: Session): Promise<Attempt> {
    const reply = TEXT.ended(s.serviceCode, languageOf(s));
    if (!(await this.sessions.close(s, reply, this.now()))) return LOST;
    this.opts.logger.warn({ sessionId: s.id, phone: maskPhone(s.phoneNumber) }, 'ussd session ended: its last hop was abandoned mid-way');
    return reply;
  }

  /**
   * Records the gateway's end-of-session notification on the session, closing it; false for an
   * unknown session, or one of another phone than the notification names (as for a hop).
   */
  async recordSessionEnd(sessionId: string, phoneNumber: string | undefined, end: { status: string; durationMs?: number; error?: string }): Promise<boolean> {
    const found = await this.repo.recordSessionEnd(sessionId, phoneNumber, {
      status: end.status,
      durationMs: end.durationMs ?? null,
      error: end.error ?? null,
      endedAt: this.now().toISOString(),
    });
    this.sessions.forget(sessionId);
    this.opts.logger.info({ sessionId, status: end.status, durationMs: end.durationMs, error: end.error, found }, 'ussd session end notified');
    return found;
  }

  // ---- operator views -------------------------------------------------------------------------
  async debug(sessionId: string): Promise<SessionDebug | undefined> {
    const s = await this.sessions.find(sessionId);
    if (!s || s.status !== 'active' || s.expiresAt <= this.now().toISOString()) return undefined;
    const { context } = JSON.parse(s.snapshot) as { context: UssdContext };
    return {
      sessionId: s.id,
      state: s.state,
      context: {
        sessionId: s.id,
        phoneNumber: maskPhone(s.phoneNumber),
        message: operatorScreen(s.state, context, this.opts.appName),
        isAuthenticated: s.isAuthenticated,
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
   * one). After that its id is remembered for a day: a later retry is told the session expired
   * instead of replaying it as a dial shortcut.
   */
  sweep(): Promise<number> {
    const now = this.now();
    const before = (ms: number) => new Date(now.getTime() - ms).toISOString();
    return this.repo.sweepSessions(
      { closedBy: now.toISOString(), expiredBy: before(this.opts.idleSeconds * 1000), forgetBy: before(SWEPT_SESSION_MEMORY_MS), now: now.toISOString() },
      languageOfSnapshot,
    );
  }
}
