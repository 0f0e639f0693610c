// The USSD menus as an XState v5 machine. It is pure: a state tagged EFFECT_TAG needs database
// or area A work, which the hop runner (menu-runner.ts) performs with the state's function in
// effects.ts and awaits before answering, sending the outcome back as a DONE event. The
// persisted snapshot is stored per session.
// Navigation everywhere below the welcome menu: `0` back, `*` to the welcome menu, `98` next page.
import { setup } from 'xstate';
import { FUEL_DAYS, LANGUAGES, type Language } from './i18n/index.ts';
import type { EffectResult, Notice, UssdContext } from './context.ts';
import { LANGUAGE_OPTION, MORE, paginate, renderScreen } from './menus.ts';
import { parseKg } from './fuel.ts';
import { pinProblem } from './pin.ts';

/** An input carries its hop's local date (YYYY-MM-DD in USSD_TIMEZONE): a day chosen by it is that date's, whenever it is saved. */
export type UssdEvent = { type: 'INPUT'; value: string; today?: string } | { type: 'DONE'; result: EffectResult };

/** The tag of every state that waits on an effect: the hop runner performs it and sends DONE. */
export const EFFECT_TAG = 'effect';
/** The states tagged EFFECT_TAG; effects.ts has one function for each (a test holds the two together). */
export type EffectState =
  | 'verifyingLogin' | 'findingPhoneAccount' | 'recoveringCustomerId' | 'checkingPhone' | 'sealingPin' | 'creatingAccount' | 'checkingDay' | 'checkingFuel' | 'savingFuel' | 'loadingReview'
  | 'preparingClaim' | 'submittingClaim' | 'loadingClaimStatus' | 'verifyingCurrentPin' | 'sealingNewPin' | 'savingNewPin' | 'savingLanguage';

const machineSetup = setup({
  types: { context: {} as UssdContext, events: {} as UssdEvent, input: {} as { appName: string; lang: Language } },
});
// The config types XState infers for this machine's states and transitions, for the helpers below.
type StateConfig = Parameters<typeof machineSetup.createStateConfig>[0];
type Transitions = NonNullable<StateConfig['on']>;
type InputRule = Extract<NonNullable<Transitions['INPUT']>, readonly unknown[]>[number];
type DoneRule = Extract<NonNullable<Transitions['DONE']>, readonly unknown[]>[number];

type Args = { context: UssdContext; event: UssdEvent };
type InputArgs = { context: UssdContext; event: Extract<UssdEvent, { type: 'INPUT' }> };
type DoneArgs = { event: Extract<UssdEvent, { type: 'DONE' }> };
const input = (e: UssdEvent) => (e.type === 'INPUT' ? e.value.trim() : '');

/** The calendar date (YYYY-MM-DD) `days` days before `date` (noon UTC steps days without DST edges). */
export function dateBefore(date: string, days: number): string {
  return new Date(Date.parse(`${date}T12:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}

/** The day chosen, `daysBefore` today, with its date as of the choosing hop. */
function chosenDay(daysBefore: number, event: UssdEvent): Pick<UssdContext, 'fuelDay' | 'fuelDate'> {
  const today = event.type === 'INPUT' ? event.today : undefined;
  return { fuelDay: daysBefore, fuelDate: today && dateBefore(today, daysBefore) };
}
const is = (value: string) => ({ event }: InputArgs) => input(event) === value;
const result = (e: UssdEvent) => (e.type === 'DONE' ? e.result : undefined);
const outcome = (o: EffectResult['outcome']) => ({ event }: DoneArgs) => event.result.outcome === o;

const update = (fn: (a: Args) => Partial<UssdContext>) => machineSetup.assign(fn);

/** Clears per-screen data on every move to another screen. */
const enter = (target: string, extra: (a: Args) => Partial<UssdContext> = () => ({})) => ({
  target,
  actions: update((a) => ({ page: 0, notice: undefined, ...extra(a) })),
});
const withNotice = (target: string, notice: (a: Args) => Notice | undefined, extra: (a: Args) => Partial<UssdContext> = () => ({})) =>
  enter(target, (a) => ({ notice: notice(a), ...extra(a) }));
const invalid: InputRule = { actions: update(() => ({ notice: { key: 'invalidChoice' } })) };
const hasMorePages = (state: string) => ({ context, event }: InputArgs) =>
  input(event) === MORE && context.page + 1 < paginate(renderScreen(state, context, context.appName), context.page).pages;
const nextPage = { actions: update(({ context }) => ({ page: context.page + 1, notice: undefined })) };

/** Every input state starts with paging and `*` (to the welcome menu), then its own rules. */
function menu(state: string, back: string | undefined, rules: InputRule[]): StateConfig {
  return {
    on: {
      INPUT: [
        { guard: hasMorePages(state), ...nextPage },
        { guard: is('*'), ...enter('preMenu') },
        ...(back ? [{ guard: is('0'), ...enter(back) }] : []),
        ...rules,
      ],
    },
  };
}
/** A state that waits on its effect; its rules take the effect's outcome (DONE). */
const effect = (on: DoneRule[]): StateConfig => ({ tags: [EFFECT_TAG], on: { DONE: on } });
const clearDraft = () => ({ draft: {} });
/** A screen asking for an existing 5-digit PIN, checked by the effect `check`. */
const pinEntry = (state: string, back: string, check: EffectState): StateConfig =>
  menu(state, back, [
    { guard: ({ event }: InputArgs) => /^\d{5}$/.test(input(event)), ...enter(check) },
    { actions: update(() => ({ notice: { key: 'pinFormat' } })) },
  ]);
const newPinNotice = ({ event }: Args): Notice | undefined => {
  const p = pinProblem(input(event));
  return p === 'format' ? { key: 'pinFormat' } : p === 'trivial' ? { key: 'pinTrivial' } : undefined;
};
/** Values stored in the claim's externalFactors; their screen labels are in the catalogues (i18n/). */
const SEASONS = ['dry', 'rainy', 'cold'] as const;
const EVENTS = ['none', 'festival or holiday', 'funeral or ceremony'] as const;
const OCCUPATIONS = ['farming', 'trading', 'wage work', 'other'] as const;
const choice = (options: readonly unknown[]) => ({ event }: InputArgs) => /^\d+$/.test(input(event)) && Number(input(event)) >= 1 && Number(input(event)) <= options.length;
const NAME_RE = /^[\p{L}][\p{L} '.-]{1,39}$/u;
/** A village's name may hold numbers ("Phase 2"), but starts with a letter: a PIN or an emoji typed by mistake is no village. */
const VILLAGE_RE = /^[\p{L}][\p{L}\p{N} '.-]{1,39}$/u;
const fromResult = ({ event }: Args): Partial<UssdContext> => {
  const r = result(event);
  return r && 'assign' in r ? r.assign ?? {} : {};
};
const resultNotice = ({ event }: Args) => result(event)?.notice;

export const ussdMachine = machineSetup.createMachine({
  id: 'ussd',
  initial: 'preMenu',
  // xstate's pure transition() builds a throwaway actor, and so this context, with no input on
  // every hop; answering that without throwing keeps a caught TypeError off every request.
  context: ({ input: i }) => ({ appName: i?.appName ?? '', lang: i?.lang ?? 'en', isAuthenticated: false, draft: {}, page: 0 }),
  states: {
    preMenu: {
      on: {
        INPUT: [
          { guard: is('*'), ...enter('goodbye') },
          { guard: is('1'), ...enter('knowMore') },
          { guard: is('2'), ...enter('accountMenu') },
          { guard: ({ context, event }: InputArgs) => context.isAuthenticated && input(event) === '3', ...enter('services') },
          { guard: is(LANGUAGE_OPTION), ...enter('language') },
          invalid,
        ],
      },
    },
    language: menu('language', 'preMenu', [
      { guard: choice(LANGUAGES), ...enter('savingLanguage', ({ event }) => ({ lang: LANGUAGES[Number(input(event)) - 1] })) },
      invalid,
    ]),
    savingLanguage: effect([{ guard: outcome('ok'), ...withNotice('preMenu', () => ({ key: 'languageSet' })) }]),
    goodbye: { type: 'final' },
    knowMore: menu('knowMore', 'preMenu', [
      { guard: ({ event }: InputArgs) => /^[1-3]$/.test(input(event)), ...enter('knowMoreTopic', ({ event }) => ({ topic: Number(input(event)) - 1 })) },
      invalid,
    ]),
    knowMoreTopic: menu('knowMoreTopic', 'knowMore', [invalid]),
    accountMenu: menu('accountMenu', 'preMenu', [
      { guard: is('1'), ...enter('loginCustomerId', clearDraft) },
      { guard: is('2'), ...enter('checkingPhone', clearDraft) },
      { guard: is('3'), ...enter('findingPhoneAccount', clearDraft) },
      invalid,
    ]),
    loginCustomerId: menu('loginCustomerId', 'accountMenu', [
      { guard: ({ event }: InputArgs) => /^\d{4,12}$/.test(input(event)), ...enter('loginPin', ({ event }) => ({ draft: { customerId: input(event) } })) },
      { actions: update(() => ({ notice: { key: 'unknownCustomer' } })) },
    ]),
    loginPin: pinEntry('loginPin', 'loginCustomerId', 'verifyingLogin'),
    verifyingLogin: effect([
      { guard: outcome('ok'), ...withNotice('services', resultNotice, (a) => ({ ...fromResult(a), isAuthenticated: true, draft: {} })) },
      { guard: outcome('retry'), ...withNotice('loginPin', resultNotice) },
      { guard: outcome('unknownCustomer'), ...withNotice('loginCustomerId', () => ({ key: 'unknownCustomer' }), clearDraft) },
      { guard: outcome('locked'), ...enter('locked', clearDraft) },
    ]),
    locked: { type: 'final' },
    // A forgotten Customer ID (or an account-created reply the network lost): the phone's own
    // account, shown after its PIN, with the same attempt count and lock as a login. A phone
    // without one is told so before its PIN is asked for.
    findingPhoneAccount: effect([
      { guard: outcome('ok'), ...enter('recoverPin') },
      { guard: outcome('unknownCustomer'), ...withNotice('accountMenu', () => ({ key: 'noAccountForPhone' })) },
    ]),
    recoverPin: pinEntry('recoverPin', 'accountMenu', 'recoveringCustomerId'),
    recoveringCustomerId: effect([
      { guard: outcome('ok'), ...enter('customerIdShown', fromResult) },
      { guard: outcome('retry'), ...withNotice('recoverPin', resultNotice) },
      { guard: outcome('unknownCustomer'), ...withNotice('accountMenu', () => ({ key: 'noAccountForPhone' })) },
      { guard: outcome('locked'), ...enter('locked') },
    ]),
    // The Customer ID was wanted to log in, so the session goes on to it instead of ending (a
    // redial costs the household). The phone's own PIN was checked a hop ago: `1` logs in
    // without asking for it again.
    customerIdShown: menu('customerIdShown', 'accountMenu', [{ guard: is('1'), ...enter('services', () => ({ isAuthenticated: true, draft: {} })) }, invalid]),
    // Asked first, so a phone with an account is not taken through every question before being
    // refused; it is taken to log in instead.
    checkingPhone: effect([
      { guard: outcome('ok'), ...enter('createName') },
      { guard: outcome('phoneTaken'), ...withNotice('loginCustomerId', () => ({ key: 'phoneHasAccount' }), clearDraft) },
    ]),
    createName: menu('createName', 'accountMenu', [
      { guard: ({ event }: InputArgs) => NAME_RE.test(input(event)), ...enter('createVillage', ({ event }) => ({ draft: { name: input(event).replace(/\s+/g, ' ') } })) },
      { actions: update(() => ({ notice: { key: 'nameFormat' } })) },
    ]),
    createVillage: menu('createVillage', 'createName', [
      { guard: is('00'), ...enter('createGroup', ({ context }) => ({ draft: { ...context.draft, village: null } })) },
      { guard: ({ event }: InputArgs) => VILLAGE_RE.test(input(event)), ...enter('createGroup', ({ context, event }) => ({ draft: { ...context.draft, village: input(event).replace(/\s+/g, ' ') } })) },
      { actions: update(() => ({ notice: { key: 'villageFormat' } })) },
    ]),
    createGroup: menu('createGroup', 'createVillage', [
      { guard: is('1'), ...enter('createPin', ({ context }) => ({ draft: { ...context.draft, testGroup: 'reference' as const } })) },
      { guard: is('2'), ...enter('createPin', ({ context }) => ({ draft: { ...context.draft, testGroup: 'intervention' as const } })) },
      invalid,
    ]),
    createPin: menu('createPin', 'createGroup', [
      { guard: (a: Args) => newPinNotice(a) === undefined, ...enter('sealingPin') },
      { actions: update((a) => ({ notice: newPinNotice(a) })) },
    ]),
    sealingPin: effect([{ guard: outcome('ok'), ...enter('createPinConfirm', (a) => fromResult(a)) }]),
    createPinConfirm: menu('createPinConfirm', 'createPin', [{ ...enter('creatingAccount') }]),
    creatingAccount: effect([
      { guard: outcome('ok'), ...enter('accountCreated', (a) => ({ ...fromResult(a), draft: {} })) },
      { guard: outcome('mismatch'), ...withNotice('createPin', () => ({ key: 'pinMismatch' }), ({ context }) => ({ draft: { ...context.draft, sealedPin: undefined } })) },
      { guard: outcome('phoneTaken'), ...withNotice('loginCustomerId', () => ({ key: 'phoneHasAccount' }), clearDraft) },
    ]),
    accountCreated: { type: 'final' },
    services: menu('services', 'preMenu', [
      { guard: is('1'), ...enter('fuelDay') },
      { guard: is('2'), ...enter('loadingReview') },
      { guard: is('3'), ...enter('preparingClaim') },
      { guard: is('4'), ...enter('loadingClaimStatus') },
      { guard: is('5'), ...enter('changePinCurrent') },
      invalid,
    ]),
    // Today, yesterday or the day before: the weighing is often done the next morning.
    fuelDay: menu('fuelDay', 'services', [
      { guard: choice(Array.from({ length: FUEL_DAYS })), ...enter('checkingDay', ({ event }) => chosenDay(Number(input(event)) - 1, event)) },
      invalid,
    ]),
    // A day already in a sent claim is refused before its kg is asked for.
    checkingDay: effect([
      { guard: outcome('ok'), ...enter('fuelAmount') },
      { guard: outcome('claimed'), ...withNotice('fuelDay', resultNotice) },
    ]),
    fuelAmount: menu('fuelAmount', 'fuelDay', [
      { guard: ({ event }: InputArgs) => parseKg(input(event)) !== undefined, ...enter('checkingFuel', ({ event }) => ({ pendingKg: parseKg(input(event)) })) },
      { actions: update(() => ({ notice: { key: 'kgFormat' } })) },
    ]),
    // Saves an amount in the plausible range; asks to confirm one outside it.
    checkingFuel: effect([
      { guard: outcome('ok'), ...withNotice('services', resultNotice, () => ({ pendingKg: undefined })) },
      { guard: outcome('confirm'), ...enter('fuelConfirm', fromResult) },
    ]),
    fuelConfirm: menu('fuelConfirm', 'fuelAmount', [
      { guard: is('1'), ...enter('savingFuel') },
      { guard: is('2'), ...enter('fuelAmount', () => ({ pendingKg: undefined })) },
      invalid,
    ]),
    savingFuel: effect([{ guard: outcome('ok'), ...withNotice('services', resultNotice, () => ({ pendingKg: undefined })) }]),
    loadingReview: effect([{ guard: outcome('ok'), ...enter('review', fromResult) }]),
    review: menu('review', 'services', [invalid]),
    preparingClaim: effect([
      { guard: outcome('ok'), ...enter('claimConfirm', fromResult) },
      { guard: outcome('tooFew'), ...withNotice('services', resultNotice) },
    ]),
    claimConfirm: menu('claimConfirm', 'services', [{ guard: is('1'), ...enter('claimSeason', () => ({ claimFactors: {} })) }, invalid]),
    claimSeason: menu('claimSeason', 'claimConfirm', [
      { guard: choice(SEASONS), ...enter('claimEvents', ({ context, event }) => ({ claimFactors: { ...context.claimFactors, season: SEASONS[Number(input(event)) - 1] } })) },
      invalid,
    ]),
    claimEvents: menu('claimEvents', 'claimSeason', [
      { guard: choice(EVENTS), ...enter('claimWork', ({ context, event }) => ({ claimFactors: { ...context.claimFactors, culturalEvents: EVENTS[Number(input(event)) - 1] } })) },
      invalid,
    ]),
    claimWork: menu('claimWork', 'claimEvents', [
      { guard: choice(OCCUPATIONS), ...enter('submittingClaim', ({ context, event }) => ({ claimFactors: { ...context.claimFactors, occupation: OCCUPATIONS[Number(input(event)) - 1] } })) },
      invalid,
    ]),
    submittingClaim: effect([
      { guard: outcome('ok'), ...enter('claimSubmitted', fromResult) },
      { guard: outcome('rejected'), ...withNotice('services', resultNotice) },
    ]),
    claimSubmitted: { type: 'final' },
    loadingClaimStatus: effect([{ guard: outcome('ok'), ...enter('claimStatus', (a) => ({ claimResult: undefined, ...fromResult(a) })) }]),
    claimStatus: menu('claimStatus', 'services', [invalid]),
    changePinCurrent: pinEntry('changePinCurrent', 'services', 'verifyingCurrentPin'),
    verifyingCurrentPin: effect([
      { guard: outcome('ok'), ...enter('changePinNew') },
      { guard: outcome('retry'), ...withNotice('changePinCurrent', resultNotice) },
      { guard: outcome('locked'), ...enter('locked', () => ({ isAuthenticated: false })) },
      { guard: outcome('unknownCustomer'), ...enter('preMenu', () => ({ isAuthenticated: false, accountId: undefined, customerId: undefined })) },
    ]),
    changePinNew: menu('changePinNew', 'services', [
      { guard: (a: Args) => newPinNotice(a) === undefined, ...enter('sealingNewPin') },
      { actions: update((a) => ({ notice: newPinNotice(a) })) },
    ]),
    sealingNewPin: effect([
      { guard: outcome('ok'), ...enter('changePinConfirm', fromResult) },
      { guard: outcome('unchanged'), ...withNotice('changePinNew', resultNotice) },
    ]),
    changePinConfirm: menu('changePinConfirm', 'changePinNew', [{ ...enter('savingNewPin') }]),
    savingNewPin: effect([
      { guard: outcome('ok'), ...withNotice('services', () => ({ key: 'pinChanged' }), clearDraft) },
      { guard: outcome('mismatch'), ...withNotice('changePinNew', () => ({ key: 'pinMismatch' }), clearDraft) },
    ]),
  },
});
