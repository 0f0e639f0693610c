// Runs a hop's inputs through the menu machine. Each hop is computed with XState's pure
// transition functions on the session's restored snapshot, without starting an actor: a session
// lives across requests and instances, so its persisted snapshot is the machine's state. A state
// tagged EFFECT_TAG is resolved by awaiting its function (effects.ts) and sending the outcome
// back as DONE, before the reply is rendered.
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import { setBounded } from '../platform/bounded-map.ts';
import { LANGUAGES, type Language } from './i18n/index.ts';
import { EFFECT_TAG, ussdMachine, type EffectState } from './machine.ts';
import { paginate, renderScreen } from './menus.ts';
import type { Effects } from './effects.ts';
import type { HopOutcome } from './session-store.ts';

type Snapshot = SnapshotFrom<typeof ussdMachine>;

/** Outcomes of hops that ran no effect, kept by snapshot and input; bounded, oldest evicted first. */
const PURE_HOPS_MAX = 2_000;

export interface HopInput {
  /** The session's persisted snapshot. */
  snapshot: string;
  /** The inputs to apply in order (more than one for a dial shortcut). */
  inputs: string[];
  /** The hop's local date (YYYY-MM-DD), given with each input. */
  today: string;
  sessionId: string;
  phoneNumber: string;
  /** Called before the hop's first effect; false stops the hop (another hop changed the session). */
  beforeEffect: () => Promise<boolean>;
}

/** The machine's state: a name, as the menus are flat (no nested states). */
const stateOf = (snapshot: Snapshot): string => (typeof snapshot.value === 'string' ? snapshot.value : JSON.stringify(snapshot.value));

export class MenuRunner {
  // The machine is pure, so a hop that ran no effect depends only on the stored snapshot and its
  // input: the same menu step taken in another session is answered from memory.
  private readonly pureHops = new Map<string, HopOutcome>();
  /** Every session starts in the same state: its persisted snapshot and first screen, built once per language. */
  private readonly firstScreens: Map<Language, HopOutcome>;

  constructor(
    private readonly appName: string,
    private readonly effects: Effects,
  ) {
    this.firstScreens = new Map(LANGUAGES.map((lang) => [lang, this.outcomeOf(initialTransition(ussdMachine, { appName, lang })[0])]));
  }

  /** The welcome screen of a new session in `lang`. */
  first(lang: Language): HopOutcome {
    return this.firstScreens.get(lang)!;
  }

  /** How many hops are remembered (the pure-hop memory). */
  get remembered(): number {
    return this.pureHops.size;
  }

  /** The outcome of the hop; undefined when `beforeEffect` refused. */
  async run(hop: HopInput): Promise<HopOutcome | undefined> {
    // The date is part of the key: a day chosen today is another date tomorrow.
    const pureKey = hop.inputs.length === 1 ? `${hop.snapshot}\u0000${hop.inputs[0]}\u0000${hop.today}` : undefined;
    const known = pureKey === undefined ? undefined : this.pureHops.get(pureKey);
    if (known) return known;

    const persisted = JSON.parse(hop.snapshot) as Snapshot;
    let snapshot = ussdMachine.resolveState({ value: persisted.value, context: persisted.context });
    let ranEffect = false;
    for (const value of hop.inputs) {
      if (snapshot.status === 'done') break;
      [snapshot] = transition(ussdMachine, snapshot, { type: 'INPUT', value, today: hop.today });
      while (snapshot.hasTag(EFFECT_TAG)) {
        const state = stateOf(snapshot);
        if (!this.hasEffect(state)) throw new Error(`state ${state} is tagged ${EFFECT_TAG} but has no effect`);
        if (!ranEffect && !(await hop.beforeEffect())) return undefined;
        ranEffect = true;
        const result = await this.effects[state]({ context: snapshot.context, input: value, sessionId: hop.sessionId, phoneNumber: hop.phoneNumber });
        [snapshot] = transition(ussdMachine, snapshot, { type: 'DONE', result });
        // Effect states always move on; staying put means an outcome the machine does not handle.
        if (stateOf(snapshot) === state) throw new Error(`effect ${state}: unhandled outcome ${result.outcome}`);
      }
    }
    const outcome = this.outcomeOf(snapshot);
    if (pureKey !== undefined && !ranEffect) setBounded(this.pureHops, pureKey, outcome, PURE_HOPS_MAX);
    return outcome;
  }

  private hasEffect(state: string): state is EffectState {
    return Object.hasOwn(this.effects, state);
  }

  private outcomeOf(snapshot: Snapshot): HopOutcome {
    return {
      snapshot: JSON.stringify(ussdMachine.getPersistedSnapshot(snapshot)),
      state: stateOf(snapshot),
      isAuthenticated: snapshot.context.isAuthenticated,
      language: snapshot.context.lang,
      reply: paginate(renderScreen(stateOf(snapshot), snapshot.context, this.appName), snapshot.context.page).reply,
      done: snapshot.status === 'done',
    };
  }
}
