// What the menu machine (machine.ts), its screens (menus.ts) and its effects (effects.ts and the
// use cases they call) share: the session's context and an effect's outcome. Kept apart from
// each of them so none imports another for its types.
import type { ClaimStatus, TestGroup } from '../../generated/openapi/types.gen.ts';
import type { Catalogue, Language, ReasonKey } from './i18n/index.ts';

/** A notice names its text in the catalogues; `day` params are offsets (0 today, 1 yesterday, ...). */
export interface Notice {
  key: keyof Catalogue['notices'];
  params?: Record<string, string | number>;
}

/** A claim as the household sees it: a short reference and, when waiting or not accepted, why. */
export interface ClaimView {
  ref: string;
  status: ClaimStatus;
  submittedOn?: string;
  reason?: ReasonKey;
}

export interface UssdContext {
  appName: string;
  lang: Language;
  isAuthenticated: boolean;
  accountId?: string;
  customerId?: string;
  /** What account creation has collected so far; a PIN appears only sealed (encrypted). */
  draft: { customerId?: string; name?: string; village?: string | null; testGroup?: TestGroup; sealedPin?: string };
  topic?: number;
  page: number;
  notice?: Notice;
  /** The day fuel is being logged for, as days before today and as the date it was when chosen, and an amount waiting for confirmation. */
  fuelDay?: number;
  fuelDate?: string;
  pendingKg?: number;
  /** Whether an amount waiting for confirmation is above or below the plausible range. */
  unusualKg?: 'high' | 'low';
  review?: { date: string; kg: number }[];
  /** The days a claim would send, as the household confirmed them: the first and last day, their count and total. */
  claimDraft?: { days: number; total: number; startDate: string; endDate: string };
  /** The KPT's external factors (rules 4 and 8), asked before submission. */
  claimFactors?: { season?: string; culturalEvents?: string; occupation?: string };
  claimResult?: ClaimView;
}

/** Outcome of an effect, sent back as DONE. */
export type EffectResult =
  | { outcome: 'ok'; assign?: Partial<UssdContext>; notice?: Notice }
  | { outcome: 'retry'; notice: Notice }
  | { outcome: 'unknownCustomer' | 'locked' | 'phoneTaken' | 'tooFew' | 'rejected' | 'mismatch' | 'confirm' | 'unchanged' | 'claimed'; notice?: Notice; assign?: Partial<UssdContext> };
