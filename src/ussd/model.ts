// What area B keeps, as its code reads it: sessions, accounts and fuel logs. The repository
// maps these to and from table rows; nothing else in the area names a column.
import type { TestGroup } from '../../generated/openapi/types.gen.ts';
import type { Language } from './i18n/index.ts';

/** What a session keeps of the last processed text: a keyed digest and the length, never the text (it holds the PINs typed). */
export interface TextMark {
  digest: string;
  length: number;
  /**
   * Short keyed digests of the text's earlier texts (its prefixes before each `*`, the empty
   * dial text left out), comma-separated: a hop repeating one of them is a late repeat.
   */
  earlier: string;
}

export type SessionStatus = 'active' | 'closed' | 'expired';

export interface Session {
  id: string;
  phoneNumber: string;
  serviceCode: string;
  /** The menu machine's persisted snapshot (JSON). */
  snapshot: string;
  state: string;
  isAuthenticated: boolean;
  lastText: TextMark;
  /** Null while a hop is being computed (the hop's lease). */
  lastReply: string | null;
  status: SessionStatus;
  /** Every write is conditional on it: concurrent hops (other instances) never overwrite each other. */
  version: number;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  /** The mobile network the gateway named (Africa's Talking `networkCode`). */
  networkCode: string | null;
}

/** What a write changes on a session. */
export type SessionChanges = Partial<Omit<Session, 'id' | 'phoneNumber' | 'serviceCode' | 'createdAt' | 'networkCode'>>;

/** The gateway's end-of-session notification, as recorded on the session. */
export interface SessionEnd {
  status: string;
  durationMs: number | null;
  error: string | null;
  endedAt: string;
}

export interface Account {
  id: string;
  customerId: string;
  phoneNumber: string;
  name: string;
  village: string | null;
  testGroup: TestGroup;
  /** Code of the catalogue the household reads (en, sw). */
  language: string;
  /** Null until the household twin exists (area A); an old account without one is an abandoned creation. */
  householdDid: string | null;
  /** AES-GCM sealed (pin.ts). */
  sealedPin: string;
  failedPinAttempts: number;
  lockedAt: string | null;
  createdAt: string;
  /** Its last change: a PIN attempt counted, say. */
  updatedAt: string;
}

/** An account as created: no household, no PIN failures yet, in a language of the catalogues. */
export type NewAccount = Pick<Account, 'id' | 'customerId' | 'phoneNumber' | 'name' | 'village' | 'testGroup' | 'sealedPin' | 'createdAt'> & { language: Language };

export interface FuelLog {
  id: string;
  /** The local calendar day (YYYY-MM-DD). */
  date: string;
  kg: number;
  /** The claim the day went into; null while unclaimed. */
  claimId: string | null;
}
