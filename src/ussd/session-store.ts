// The session store: sessions live in the database so any instance can answer the next hop.
// Every write is conditional on the row's version (optimistic concurrency): a write that finds
// another version returns false and the hop starts over. This instance remembers the sessions it
// wrote last, to save a read per hop, and the hops it is running, so a duplicate of one of them
// waits for its end instead of a timer.
import { setTimeout as sleep } from 'node:timers/promises';
import { setBounded } from '../platform/bounded-map.ts';
import type { PinCipher } from './pin.ts';
import type { Language } from './i18n/index.ts';
import type { Session, TextMark } from './model.ts';
import type { UssdRepository } from './repository.ts';

/** Sessions this instance wrote last, to save a read per hop; bounded, oldest evicted first. */
const RECENT_SESSIONS_MAX = 10_000;
/** How long a duplicate hop waits for the reply of the hop it duplicates. */
const CONCURRENT_HOP_WAIT_MS = 3000;
/** The first and longest pause between reads while another instance's hop runs: a hop takes milliseconds, a slow one (area A) longer. */
const POLL_FIRST_MS = 20;
const POLL_MAX_MS = 320;

/** What a hop leaves in the session. */
export interface HopOutcome {
  snapshot: string;
  state: string;
  isAuthenticated: boolean;
  /** The language of its screens, as the snapshot holds it. */
  language: Language;
  reply: string;
  done: boolean;
}

export interface SessionStoreOptions {
  /** Keys the text marks. */
  pins: PinCipher;
  idleSeconds: number;
  /** The pause between reads of a session another instance is working on. */
  pause?: (ms: number) => Promise<unknown>;
}

export class SessionStore {
  // Only a hint: every write is conditional on the row's version, so a stale entry costs one
  // failed update and a re-read, never a wrong answer.
  private readonly recent = new Map<string, Session>();
  /** Hops of this instance holding their session's lease, by session id: settled when the hop ends. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly pause: (ms: number) => Promise<unknown>;
  /** The mark of every new session, computed once. */
  private readonly emptyMark: TextMark;

  constructor(
    private readonly repo: UssdRepository,
    private readonly opts: SessionStoreOptions,
  ) {
    // Unreferenced: a pending pause never keeps the process up.
    this.pause = opts.pause ?? ((ms) => sleep(ms, undefined, { ref: false }));
    this.emptyMark = { digest: opts.pins.digest(''), length: 0, earlier: '' };
  }

  /** The mark of a text: a keyed digest (the text holds PINs) and its length; `earlier` is left empty (markOfHop fills it). */
  markOf(text: string): TextMark {
    if (text === '') return this.emptyMark;
    return { digest: this.opts.pins.digest(text), length: text.length, earlier: '' };
  }

  /** The mark a hop of `text` leaves on its session, with the digests of its earlier texts. */
  markOfHop(text: string): TextMark {
    const earlier: string[] = [];
    for (let i = text.indexOf('*'); i > 0; i = text.indexOf('*', i + 1)) earlier.push(this.shortDigest(text.slice(0, i)));
    return { ...this.markOf(text), earlier: earlier.join(',') };
  }

  /**
   * Whether `text` is the text of one of the session's hops before its last (a gateway repeating
   * an old hop late), or the dial's: either is no new keypress.
   */
  isEarlierText(s: Session, text: string): boolean {
    if (text === '') return s.lastText.length > 0;
    return s.lastText.earlier !== '' && s.lastText.earlier.split(',').includes(this.shortDigest(text));
  }

  /** 64 bits of the keyed digest: enough to tell a session's few texts apart. */
  private shortDigest(text: string): string {
    return this.opts.pins.digest(text).slice(0, 16);
  }

  /** The session as this instance last wrote it; undefined if it wrote none (or forgot it). */
  remembered(id: string): Session | undefined {
    return this.recent.get(id);
  }

  find(id: string): Promise<Session | undefined> {
    return this.repo.findSession(id);
  }

  forget(id: string): void {
    this.recent.delete(id);
  }

  /** When a session touched at `now` expires. */
  expiry(now: Date): string {
    return new Date(now.getTime() + this.opts.idleSeconds * 1000).toISOString();
  }

  /** Stores a new session; false when another hop stored one with this id first. */
  async insert(session: Session): Promise<boolean> {
    if (!(await this.repo.insertSession(session))) return false;
    this.remember(session);
    return true;
  }

  /** Marks an idle session expired (kept until the sweep); false when another hop changed it. */
  async expire(s: Session): Promise<boolean> {
    this.forget(s.id);
    if (s.status === 'expired') return true;
    return this.repo.updateSession(s.id, s.version, { status: 'expired', version: s.version + 1 });
  }

  /** Deletes the session (a dial reusing an expired id starts over); false when another hop changed it. */
  async remove(s: Session): Promise<boolean> {
    this.forget(s.id);
    return this.repo.deleteSession(s.id, s.version);
  }

  /**
   * A hop's lease on its session, taken before its first effect (effects write): the version
   * moves on and the text's mark is stored without a reply, so a concurrent duplicate of the hop
   * waits for this one's reply instead of applying it twice.
   */
  lease(s: Session, mark: TextMark, now: Date): HopLease {
    return new HopLease(this, this.repo, this.running, s, mark, now);
  }

  /** Stores a hop's outcome if the session still has `version`; false when another hop got there first. */
  async saveHop(s: Session, version: number, mark: TextMark, outcome: HopOutcome, now: Date): Promise<boolean> {
    const changes = {
      snapshot: outcome.snapshot,
      state: outcome.state,
      isAuthenticated: outcome.isAuthenticated,
      lastText: mark,
      lastReply: outcome.reply,
      status: outcome.done ? ('closed' as const) : ('active' as const),
      version: version + 1,
      updatedAt: now.toISOString(),
      expiresAt: this.expiry(now),
    };
    if (!(await this.repo.updateSession(s.id, version, changes))) return false;
    if (outcome.done) this.forget(s.id);
    else this.remember({ ...s, ...changes });
    return true;
  }

  /** Closes the session with `reply` as its last; false when another hop changed it. */
  async close(s: Session, reply: string, now: Date): Promise<boolean> {
    const closed = await this.repo.updateSession(s.id, s.version, {
      status: 'closed', lastReply: reply, version: s.version + 1, updatedAt: now.toISOString(), expiresAt: this.expiry(now),
    });
    this.forget(s.id);
    return closed;
  }

  /**
   * The session once the hop that holds its lease has replied, or as it is after
   * CONCURRENT_HOP_WAIT_MS (still without a reply); undefined if it is gone. A hop of this
   * instance is awaited; one of another instance is read again after growing pauses.
   */
  async awaitReply(s: Session): Promise<Session | undefined> {
    const deadline = Date.now() + CONCURRENT_HOP_WAIT_MS;
    let pause = POLL_FIRST_MS;
    let current: Session | undefined = s;
    while (current && current.lastReply === null) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const own = this.running.get(s.id);
      if (own) {
        await Promise.race([own, this.pause(left)]);
      } else {
        await this.pause(Math.min(pause, left));
        pause = Math.min(pause * 2, POLL_MAX_MS);
      }
      current = await this.repo.findSession(s.id);
    }
    return current;
  }

  private remember(s: Session): void {
    setBounded(this.recent, s.id, s, RECENT_SESSIONS_MAX);
  }
}

/** See SessionStore.lease. Taken at most once; `end` must follow, whatever the hop's fate. */
export class HopLease {
  /** The session's version while the hop holds the lease. */
  version: number;
  held = false;
  private settle?: () => void;

  constructor(
    private readonly store: SessionStore,
    private readonly repo: UssdRepository,
    private readonly running: Map<string, Promise<void>>,
    private readonly session: Session,
    private readonly mark: TextMark,
    private readonly now: Date,
  ) {
    this.version = session.version;
  }

  /** Takes the lease (once); false when another hop changed the session first. */
  async take(): Promise<boolean> {
    if (this.held) return true;
    const s = this.session;
    const ok = await this.repo.updateSession(s.id, s.version, { version: s.version + 1, lastText: this.mark, lastReply: null, updatedAt: this.now.toISOString() });
    if (!ok) return false;
    this.version = s.version + 1;
    this.held = true;
    this.running.set(s.id, new Promise<void>((resolve) => (this.settle = resolve)));
    return true;
  }

  /**
   * Gives the hop back (it failed): the session's last text and reply as they were, so the
   * gateway's retry applies it again. The effects that ran are idempotent or counted on the account.
   */
  async giveBack(): Promise<void> {
    if (!this.held) return;
    const s = this.session;
    await this.repo.updateSession(s.id, this.version, { lastText: s.lastText, lastReply: s.lastReply, version: this.version + 1 }).catch(() => undefined);
    this.store.forget(s.id);
  }

  /** The hop is over (saved, given back or lost): hops waiting on it go on. */
  end(): void {
    if (!this.settle) return;
    this.running.delete(this.session.id);
    this.settle();
    this.settle = undefined;
  }
}
