// Claim effects: the days a claim would send, its submission through area A's claim service
// (a unit of work of its own holding area B's writes: sendClaim), the short reference a household reads out,
// and the plain reason shown for a claim waiting or not accepted.
import { hash } from 'node:crypto';
import type { ReasonKey } from './i18n/index.ts';
import type { ClaimView, EffectResult, UssdContext } from './context.ts';
import type { FuelLog } from './model.ts';
import { markFuelLogsClaimed, storeClaimRef } from './repository.ts';
import { inTransaction, type Sql } from '../platform/db/sql.ts';
import { ClaimRefusedError, type ClaimSummary, type UssdTwinsPort } from './twins-port.ts';
import type { EffectDeps } from './effect-deps.ts';

const MIN_CLAIM_DAYS = 3;
const DAY_MS = 86_400_000;

/** Letters and digits that cannot be mistaken for one another when read out (no 0/O, 1/I/L, 2/Z, 5/S, 8/B). */
const REF_ALPHABET = 'ACDEFGHJKMNPQRTUVWXY3479';
const CLAIM_REF_LENGTH = 8;

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

/** A reading changed (or went to another claim) between reading the days and storing the claim. */
export class ReadingChangedError extends Error {
  override name = 'ReadingChangedError';
  constructor() {
    super('a reading changed after the claim was prepared');
  }
}

/** The plain reason for a submission that was refused, or undefined for a failure (to be thrown on). */
export function refusalReason(err: unknown): ReasonKey | undefined {
  if (err instanceof ReadingChangedError) return 'readingChanged';
  if (!(err instanceof ClaimRefusedError)) return undefined;
  return err.problems.map((p) => RULE_REASONS.get(p.rule ?? '')).find((r) => r !== undefined) ?? 'other';
}

/** The most recent run of consecutive days not yet used by a claim (logs sorted by date). */
function latestUnclaimedRun(logs: FuelLog[]): FuelLog[] {
  const unclaimed = logs.filter((l) => !l.claimId);
  let start = unclaimed.length - 1;
  while (start > 0 && Date.parse(unclaimed[start]!.date) - Date.parse(unclaimed[start - 1]!.date) === DAY_MS) start--;
  return unclaimed.slice(Math.max(start, 0));
}

const sum = (xs: number[]) => Math.round(xs.reduce((s, x) => s + x, 0) * 1000) / 1000;

/**
 * Too few days: what to log next (`loggable`: the dates that can still be logged, today first).
 * A new claim's days come after the latest one already in a sent claim: the loggable days after
 * it that are missing are named (oldest first, as a household logs them), and the days it still
 * lacks are logged from tomorrow on. Before any claim that is never needed: today and the two
 * days before make three.
 */
function tooFewDays(all: FuelLog[], loggable: string[]): EffectResult {
  const logged = new Map(all.map((l) => [l.date, l]));
  const lastClaimed = loggable.findIndex((date) => logged.get(date)?.claimId);
  const open = lastClaimed === -1 ? loggable.length : lastClaimed;
  const missing = loggable.slice(0, open).flatMap((date, offset) => (logged.has(date) ? [] : [offset]));
  const params = { days: missing.reverse().join(','), fromTomorrow: Math.max(MIN_CLAIM_DAYS - open, 0), someLogged: missing.length < open ? 1 : 0 };
  return { outcome: 'tooFew', notice: { key: 'logDays', params } };
}

/** The claim the household would send: its days and total, or too few days (`loggable`: the dates that can be logged, today first). */
export async function prepareClaim(deps: EffectDeps, accountId: string, loggable: string[]): Promise<EffectResult> {
  const all = await deps.repo.fuelLogs(accountId);
  const logs = latestUnclaimedRun(all);
  if (logs.length < MIN_CLAIM_DAYS) return tooFewDays(all, loggable);
  return { outcome: 'ok', assign: { claimDraft: { days: logs.length, total: sum(logs.map((l) => l.kg)), startDate: logs[0]!.date, endDate: logs.at(-1)!.date } } };
}

/** The claim every one of the days went into, if one did (another session of the household sent them). */
function claimOfAll(logs: FuelLog[]): string | undefined {
  const claimId = logs[0]?.claimId;
  return claimId && logs.every((l) => l.claimId === claimId) ? claimId : undefined;
}

const notSent = (reason: ReasonKey): EffectResult => ({ outcome: 'rejected', notice: { key: 'claimNotSent', params: { reason } } });

/**
 * The claim submission, a use case spanning area A (the claim) and area B (the days it used and
 * its short reference): it owns its unit of work. It lives in area B, which starts it and whose
 * writes it holds; area A is reached only through the port, as steps taking this transaction.
 * Area A admits the claim (its locks first), the days are marked and the reference stored,
 * area A stores the claim, all in one transaction: a claim is never stored with its days left
 * open for another claim, nor with readings another session changed meanwhile. After the
 * commit area A answers (reconciling a pending claim on PostgreSQL). A claim stored before that
 * answers the submission (a retry, an identical claim, one a concurrent submission committed
 * first) gets its days and reference in a transaction of their own.
 */
async function sendClaim(
  { db, twins, now }: EffectDeps,
  accountId: string,
  logs: FuelLog[],
  request: Parameters<UssdTwinsPort['prepareClaim']>[0],
): Promise<ClaimSummary> {
  const submission = await twins.prepareClaim(request);
  const storeDays = async (sql: Sql, claimId: string) => {
    const at = now().toISOString();
    if (!(await markFuelLogsClaimed(sql, logs, claimId, at))) throw new ReadingChangedError();
    await storeClaimRef(sql, claimRef(claimId), claimId, accountId, at);
  };
  let answer: string;
  try {
    const found = await inTransaction(db, async (sql) => {
      const stored = await submission.admit(sql);
      if (stored !== undefined) return stored;
      await storeDays(sql, submission.claimId);
      await submission.store(sql);
      return undefined;
    });
    if (found === undefined) return await submission.stored();
    answer = await submission.replay();
  } catch (err) {
    answer = await submission.recover(err);
  }
  await inTransaction(db, (sql) => storeDays(sql, answer));
  return submission.replayed();
}

/**
 * Submits the days the household confirmed (the draft) with the answers given; a refusal is shown
 * in plain words. Days another session of the household sent meanwhile answer with that claim;
 * days changed since they were confirmed are not sent.
 */
export async function submitClaim(deps: EffectDeps, c: UssdContext): Promise<EffectResult> {
  const { repo, logger } = deps;
  const account = await repo.findAccount(c.accountId!);
  const draft = c.claimDraft;
  if (!account?.householdDid || !draft) return notSent('other');
  const logs = (await repo.fuelLogs(account.id)).filter((l) => l.date >= draft.startDate && l.date <= draft.endDate);
  const sentIn = claimOfAll(logs);
  const sent = sentIn && (await deps.twins.claim(sentIn));
  if (sent) return { outcome: 'ok', assign: { claimResult: claimView(sent) } };
  if (logs.some((l) => l.claimId)) return notSent('daysInOtherClaim');
  if (logs.length !== draft.days || sum(logs.map((l) => l.kg)) !== draft.total) return notSent('readingChanged');
  const request = {
    householdDid: account.householdDid,
    testGroup: account.testGroup,
    dailyLogs: logs.map((l) => l.kg),
    total: sum(logs.map((l) => l.kg)),
    externalFactors: {
      season: c.claimFactors?.season ?? 'not stated',
      culturalEvents: [c.claimFactors?.culturalEvents ?? 'none'],
      occupationalFactors: [c.claimFactors?.occupation ?? 'not stated'],
    },
    startDate: logs[0]!.date,
    endDate: logs[logs.length - 1]!.date,
  };
  let claim: ClaimSummary;
  try {
    // The same request again (a retry) carries the same key and yields the same claim. The key
    // covers the whole request, as area A compares whole requests: the same days with other
    // answers are a new request, which area A answers with the stored claim as an identical
    // resubmission (or a correction of it).
    claim = await sendClaim(deps, account.id, logs, { ...request, idempotencyKey: `ussd-${hash('sha256', JSON.stringify(request), 'hex')}` });
  } catch (err) {
    const reason = refusalReason(err);
    if (!reason) throw err;
    // The household reads a plain reason; the operator's detail goes to the log.
    const refusal = err instanceof ClaimRefusedError ? { detail: err.detail, problems: err.problems } : {};
    logger.warn({ customerId: account.customerId, reason, ...refusal }, 'ussd claim refused');
    return notSent(reason);
  }
  if (claim.status === 'rejected') {
    // Days of a claim that was not accepted are free again: once the cause is fixed (answers,
    // the programme's set-up) the household sends them again.
    await repo.releaseFuelLogs(account.id, claim.id, deps.now().toISOString());
    logger.warn({ customerId: account.customerId, claimId: claim.id, rule: claim.reasonRule }, 'ussd claim not accepted; its days are released');
  }
  return { outcome: 'ok', assign: { claimResult: claimView(claim) } };
}

/** The household's latest claim as it stands now. */
export async function claimStatus(deps: EffectDeps, accountId: string): Promise<EffectResult> {
  const account = await deps.repo.findAccount(accountId);
  const latest = account?.householdDid ? await deps.twins.latestClaim(account.householdDid) : undefined;
  if (!account || !latest) return { outcome: 'ok' };
  // Again here, should the release after submission not have happened (the process stopped).
  if (latest.status === 'rejected') await deps.repo.releaseFuelLogs(account.id, latest.id, deps.now().toISOString());
  return { outcome: 'ok', assign: { claimResult: claimView(latest) } };
}
