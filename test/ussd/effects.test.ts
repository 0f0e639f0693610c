// The menu machine's effects as plain functions, with recording doubles of the repository and
// area A: which state has which effect, and the rules the effects hold on their own.
import { expect } from 'chai';
import { pino } from 'pino';
import { createDb, type Db } from '../../src/platform/db/index.ts';
import { conflictWith, refusedInput } from '../../src/platform/domain-errors.ts';
import { AppError } from '../../src/platform/http/errors.ts';
import { ClaimRefusedError, type UssdTwinsPort } from '../../src/ussd/twins-port.ts';
import { asClaimRefusal } from '../../src/ussd/twins-adapter.ts';
import { ReadingChangedError, refusalReason } from '../../src/ussd/claims.ts';
import { createEffects, type EffectInput } from '../../src/ussd/effects.ts';
import type { EffectDeps } from '../../src/ussd/effect-deps.ts';
import { EFFECT_TAG, ussdMachine } from '../../src/ussd/machine.ts';
import type { UssdContext } from '../../src/ussd/context.ts';
import { PinCipher } from '../../src/ussd/pin.ts';
import type { UssdRepository } from '../../src/ussd/repository.ts';
import type { Account, FuelLog, NewAccount } from '../../src/ussd/model.ts';

const pins = new PinCipher(Buffer.alloc(32, 7));
const context = (extra: Partial<UssdContext> = {}): UssdContext => ({ appName: 'Hearth', lang: 'en', isAuthenticated: true, accountId: 'acc1', draft: {}, page: 0, ...extra });
const input = (c: UssdContext, value = ''): EffectInput => ({ context: c, input: value, sessionId: 's1', phoneNumber: '+254712345678' });

/** Effects on a repository double holding only what a test gives it (a missing method fails the test). */
function effectsWith(repo: Partial<UssdRepository>, extra: Partial<EffectDeps> = {}) {
  return createEffects({
    db: {} as Db,
    repo: repo as UssdRepository,
    pins,
    twins: {} as UssdTwinsPort,
    logger: pino({ level: 'silent' }),
    now: () => new Date('2026-03-01T22:30:00Z'),
    ...extra,
  });
}

describe('USSD effects', () => {
  it('every state tagged as an effect has its function, and every function a tagged state', () => {
    const tagged = Object.keys(ussdMachine.states).filter((s) => ussdMachine.states[s]!.tags.includes(EFFECT_TAG));
    expect(Object.keys(effectsWith({})).sort()).to.deep.equal([...tagged].sort());
    expect(tagged).to.include.members(['verifyingLogin', 'creatingAccount', 'submittingClaim']);
  });

  it('fuel is saved for the chosen day of the USSD_TIMEZONE calendar (22:30 UTC is already tomorrow in Nairobi)', async () => {
    const saved: { date: string; kg: number }[] = [];
    const repo: Partial<UssdRepository> = {
      upsertFuelLog: async (_account: string, date: string, kg: number) => (saved.push({ date, kg }), 'saved' as const),
    };
    const nairobi = effectsWith(repo, { timeZone: 'Africa/Nairobi' });
    expect(await nairobi.savingFuel(input(context({ pendingKg: 2.5, fuelDay: 0 })))).to.deep.equal({ outcome: 'ok', notice: { key: 'fuelSaved', params: { kg: 2.5, day: 0 } } });
    await nairobi.savingFuel(input(context({ pendingKg: 3, fuelDay: 2 })));
    await effectsWith(repo).savingFuel(input(context({ pendingKg: 3, fuelDay: 0 })));
    expect(saved).to.deep.equal([{ date: '2026-03-02', kg: 2.5 }, { date: '2026-02-28', kg: 3 }, { date: '2026-03-01', kg: 3 }]);
  });

  it('an amount outside the plausible range asks for confirmation and saves nothing; once confirmed it is saved', async () => {
    const saved: number[] = [];
    const effects = effectsWith(
      { upsertFuelLog: async (_a: string, _d: string, kg: number) => (saved.push(kg), 'claimed' as const) },
      { plausibleKg: { min: 0.2, max: 30 } },
    );
    expect(await effects.checkingFuel(input(context({ pendingKg: 45 })))).to.deep.equal({ outcome: 'confirm', assign: { unusualKg: 'high' } });
    expect(await effects.checkingFuel(input(context({ pendingKg: 0.1 })))).to.deep.equal({ outcome: 'confirm', assign: { unusualKg: 'low' } });
    expect(saved).to.deep.equal([]);
    // a day already in a claim stays as claimed, and says so
    expect(await effects.savingFuel(input(context({ pendingKg: 45, fuelDay: 1 })))).to.deep.equal({ outcome: 'ok', notice: { key: 'fuelClaimed', params: { kg: 45, day: 1 } } });
    expect(saved).to.deep.equal([45]);
  });

  it('a Customer ID already taken is drawn again: the account gets a free 8-digit one', async () => {
    const asked: string[] = [];
    const inserted: NewAccount[] = [];
    const repo: Partial<UssdRepository> = {
      findAccountByPhone: async () => undefined,
      findAccountByCustomerId: async (id: string) => (asked.push(id), asked.length === 1 ? ({ customerId: id } as Account) : undefined),
      insertAccount: async (a: NewAccount) => (inserted.push(a), true),
      setHouseholdDid: async () => {},
    };
    const twins = { newHousehold: async () => ({ did: 'did:ixo:entity:1', store: async () => {} }) } as Partial<UssdTwinsPort> as UssdTwinsPort;
    // The household registration's transaction, on an empty database (the repository and port are fakes).
    const db = createDb({ url: 'sqlite::memory:', dataDir: '.', poolMax: 1 });
    const draft = { name: 'Jane Doe', village: null, testGroup: 'reference' as const, sealedPin: pins.seal('24680') };
    let result;
    try {
      result = await effectsWith(repo, { twins, db }).creatingAccount(input(context({ draft, isAuthenticated: false }), '24680'));
    } finally {
      await db.destroy();
    }
    expect(asked).to.have.length(2);
    expect(asked[0]).to.not.equal(asked[1]);
    expect(inserted.map((a) => a.customerId)).to.deep.equal([asked[1]]);
    expect(result).to.deep.equal({ outcome: 'ok', assign: { customerId: asked[1] } });
    expect(asked[1]).to.match(/^[1-9]\d{7}$/);
    // the PIN is stored sealed again (a fresh IV), never as typed
    expect(inserted[0]!.sealedPin).to.not.equal(draft.sealedPin);
    expect(pins.matches(inserted[0]!.sealedPin, '24680')).to.equal(true);
  });

  it('a claim short of days says what to log next: the missing days, then (after a sent claim) days from tomorrow', async () => {
    // Today is 1 March (UTC); the logs are [date, claim] pairs.
    const tooFew = async (logs: [string, string | null][]) =>
      (await effectsWith({ fuelLogs: async () => logs.map(([date, claimId], i): FuelLog => ({ id: `f${i}`, date, kg: 2, claimId })) }).preparingClaim(input(context()))).notice;
    const claimed = (...dates: string[]): [string, string][] => dates.map((d) => [d, 'clm_1']);
    expect(await tooFew([])).to.deep.equal({ key: 'logDays', params: { days: '2,1,0', fromTomorrow: 0, someLogged: 0 } });
    expect(await tooFew([['2026-02-27', null]])).to.deep.equal({ key: 'logDays', params: { days: '1,0', fromTomorrow: 0, someLogged: 1 } });
    // Right after a claim of the last three days: three new days from tomorrow.
    expect(await tooFew(claimed('2026-02-27', '2026-02-28', '2026-03-01'))).to.deep.equal({ key: 'logDays', params: { days: '', fromTomorrow: 3, someLogged: 0 } });
    // A claim that ended yesterday: today, then two days from tomorrow.
    expect(await tooFew(claimed('2026-02-26', '2026-02-27', '2026-02-28'))).to.deep.equal({ key: 'logDays', params: { days: '0', fromTomorrow: 2, someLogged: 0 } });
    // One that ended the day before yesterday, yesterday logged: today and tomorrow.
    expect(await tooFew([...claimed('2026-02-25', '2026-02-26', '2026-02-27'), ['2026-02-28', null]])).to.deep.equal({
      key: 'logDays',
      params: { days: '0', fromTomorrow: 1, someLogged: 1 },
    });
  });

  it("area A's refusal becomes a plain reason; its failures are not refusals", () => {
    const refused = asClaimRefusal(
      conflictWith('overlap', [{ path: ['testPeriod'], message: 'claim kpt_1 already covers it', rule: 'no-overlapping-claim' }]),
    );
    expect(refused).to.be.instanceOf(ClaimRefusedError);
    expect((refused as ClaimRefusedError).problems).to.deep.equal([{ field: '/testPeriod', message: 'claim kpt_1 already covers it', rule: 'no-overlapping-claim' }]);
    expect(refusalReason(refused)).to.equal('daysInOtherClaim');
    expect(refusalReason(asClaimRefusal(refusedInput('no rule named')))).to.equal('other');
    expect(refusalReason(new ReadingChangedError())).to.equal('readingChanged');
    const outage = new AppError(503, 'Service Unavailable');
    expect(asClaimRefusal(outage)).to.equal(outage);
    expect(refusalReason(outage)).to.equal(undefined);
    expect(refusalReason(new Error('a bug'))).to.equal(undefined);
  });
});
