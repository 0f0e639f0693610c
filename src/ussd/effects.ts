// The menu machine's effects: one typed function for each state tagged EFFECT_TAG, doing that
// step's database (or area A) work and answering with the outcome the machine takes as DONE.
// Accounts and PINs are in accounts.ts, claims in claims.ts; the small ones are here.
import { checkPin, createAccount, phoneIsFree } from './accounts.ts';
import { claimStatus, prepareClaim, submitClaim } from './claims.ts';
import { asLanguage, FUEL_DAYS } from './i18n/index.ts';
import { dateBefore, type EffectState } from './machine.ts';
import type { EffectResult, UssdContext } from './context.ts';
import type { EffectDeps } from './effect-deps.ts';

/** What an effect is given: the context on entering its state and the input that led there. */
export interface EffectInput {
  context: UssdContext;
  /** The input of the hop (a PIN, a choice). */
  input: string;
  sessionId: string;
  phoneNumber: string;
}

export type Effect = (e: EffectInput) => Promise<EffectResult> | EffectResult;
export type Effects = { readonly [S in EffectState]: Effect };

/** Formats a date as YYYY-MM-DD (en-CA's form) in `timeZone`. */
export const localDateFormat = (timeZone = 'UTC') => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });

/** The local calendar date `daysBefore` days before today, in the formatter's time zone. */
export function localDay(today: Intl.DateTimeFormat, now: Date, daysBefore: number): string {
  return dateBefore(today.format(now), daysBefore);
}

export function createEffects(deps: EffectDeps): Effects {
  const { repo, pins, logger } = deps;
  // en-CA formats a date as YYYY-MM-DD.
  const localDate = localDateFormat(deps.timeZone);
  const nowIso = () => deps.now().toISOString();
  const dayOf = (c: UssdContext) => Math.min(Math.max(c.fuelDay ?? 0, 0), FUEL_DAYS - 1);
  // The date of the day as the household chose it (a choice made before midnight keeps its
  // date); a session that chose before dates were kept counts from today.
  const dateOf = (c: UssdContext) => c.fuelDate ?? localDay(localDate, deps.now(), dayOf(c));

  /** Saves the pending amount for the chosen day; with `check`, one outside the plausible range is first confirmed. */
  const saveFuel = (check: boolean): Effect => async ({ context: c }) => {
    const kg = c.pendingKg!;
    const day = dayOf(c);
    const range = deps.plausibleKg;
    if (check && range && (kg < range.min || kg > range.max)) return { outcome: 'confirm', assign: { unusualKg: kg > range.max ? 'high' : 'low' } };
    const saved = await repo.upsertFuelLog(c.accountId!, dateOf(c), kg, nowIso());
    const key = saved === 'saved' ? 'fuelSaved' : saved === 'updated' ? 'fuelUpdated' : 'fuelClaimed';
    return { outcome: 'ok', notice: { key, params: { kg, day } } };
  };

  return {
    async verifyingLogin({ context: c, input }) {
      const account = await repo.findAccountByCustomerId(c.draft.customerId ?? '');
      if (!account) return { outcome: 'unknownCustomer' };
      const check = await checkPin(deps, account.id, input);
      if (check.outcome !== 'ok') return check;
      return {
        outcome: 'ok',
        assign: { accountId: account.id, customerId: account.customerId, lang: asLanguage(account.language) ?? c.lang },
        notice: { key: 'loggedIn', params: { name: account.name.split(' ')[0]! } },
      };
    },
    async findingPhoneAccount({ phoneNumber }) {
      return (await repo.findAccountByPhone(phoneNumber))?.householdDid ? { outcome: 'ok' } : { outcome: 'unknownCustomer' };
    },
    async recoveringCustomerId({ input, sessionId, phoneNumber }) {
      // An account whose creation has not finished has no Customer ID to give yet.
      const account = await repo.findAccountByPhone(phoneNumber);
      if (!account?.householdDid) return { outcome: 'unknownCustomer' };
      const check = await checkPin(deps, account.id, input);
      if (check.outcome !== 'ok') return check;
      logger.info({ sessionId, customerId: account.customerId }, 'ussd customer id shown again');
      // The account is kept for the login the next screen offers; nothing is open to it until then.
      return { outcome: 'ok', assign: { customerId: account.customerId, accountId: account.id } };
    },
    async checkingPhone({ phoneNumber }) {
      return (await phoneIsFree(deps, phoneNumber)) ? { outcome: 'ok' } : { outcome: 'phoneTaken' };
    },
    async savingLanguage({ context: c, phoneNumber }) {
      // Kept on the phone's account (logged in or not: the account is the phone's) for later sessions.
      await repo.setLanguage(c.accountId ? { id: c.accountId } : { phoneNumber }, c.lang, nowIso());
      return { outcome: 'ok' };
    },
    verifyingCurrentPin: ({ context: c, input }) => checkPin(deps, c.accountId!, input),
    sealingPin: ({ context: c, input }) => ({ outcome: 'ok', assign: { draft: { ...c.draft, sealedPin: pins.seal(input) } } }),
    async sealingNewPin({ context: c, input }) {
      // The current PIN again changes nothing: the household is told so instead of "PIN changed".
      const account = await repo.findAccount(c.accountId!);
      if (account && pins.matches(account.sealedPin, input)) return { outcome: 'unchanged', notice: { key: 'pinUnchanged' } };
      return { outcome: 'ok', assign: { draft: { sealedPin: pins.seal(input) } } };
    },
    creatingAccount: ({ context: c, input, phoneNumber }) => createAccount(deps, c, input, phoneNumber),
    async savingNewPin({ context: c, input, sessionId }) {
      if (!c.draft.sealedPin || !pins.matches(c.draft.sealedPin, input)) return { outcome: 'mismatch' };
      await repo.updatePin(c.accountId!, pins.seal(input), nowIso());
      logger.info({ sessionId }, 'ussd PIN changed');
      return { outcome: 'ok' };
    },
    async checkingDay({ context: c }) {
      const claimed = await repo.fuelDayClaimed(c.accountId!, dateOf(c));
      return claimed ? { outcome: 'claimed', notice: { key: 'dayClaimed', params: { day: dayOf(c) } } } : { outcome: 'ok' };
    },
    checkingFuel: saveFuel(true),
    savingFuel: saveFuel(false),
    async loadingReview({ context: c }) {
      const logs = await repo.fuelLogs(c.accountId!);
      return { outcome: 'ok', assign: { review: logs.map((l) => ({ date: l.date, kg: l.kg })) } };
    },
    preparingClaim: ({ context: c }) => prepareClaim(deps, c.accountId!, Array.from({ length: FUEL_DAYS }, (_, offset) => localDay(localDate, deps.now(), offset))),
    submittingClaim: ({ context: c }) => submitClaim(deps, c),
    loadingClaimStatus: ({ context: c }) => claimStatus(deps, c.accountId!),
  };
}
