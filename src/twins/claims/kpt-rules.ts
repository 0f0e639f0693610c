// The KPT rules of the spec, as pure functions over a claim request and what its collection
// holds. Conflicts in the measurement data itself are 409s (measurementConflicts); the eight
// validation rules decide the claim's status (evaluateKptRules).
import type { ClaimReason, ClaimStatus, KptClaimRequest, RuleCheck, RuleId, TestGroup } from '../../../generated/openapi/types.gen.ts';
import type { InputIssue } from '../../platform/domain-errors.ts';

export const RULES: Record<RuleId, number> = {
  'min-duration': 1,
  'total-matches-logs': 2,
  'positive-values': 3,
  'seasonal-variations-documented': 4,
  'random-selection-verified': 5,
  'control-group-present': 6,
  'timing-aligned': 7,
  'external-factors-documented': 8,
};

export const MIN_TEST_DAYS = 3;

export function otherGroup(g: TestGroup): TestGroup {
  return g === 'reference' ? 'intervention' : 'reference';
}

/** Sum without the drift of naive addition (Neumaier); the tolerance absorbs what is left. */
export function preciseSum(values: number[]): number {
  let sum = 0;
  let c = 0;
  for (const v of values) {
    const t = sum + v;
    c += Math.abs(sum) >= Math.abs(v) ? sum - t + v : v - t + sum;
    sum = t;
  }
  return sum + c;
}

const DAY_MS = 86_400_000;

/** Days from start to end, both included (dates are YYYY-MM-DD, validated upstream). */
export function inclusiveDays(startDate: string, endDate: string): number {
  return Math.round((Date.parse(`${endDate}T00:00:00Z`) - Date.parse(`${startDate}T00:00:00Z`)) / DAY_MS) + 1;
}

export function periodsOverlap(a: { start: string; end: string }, b: { start: string; end: string }): boolean {
  return a.start <= b.end && b.start <= a.end;
}

/** Measurement data that contradicts itself: one issue per conflict (the claim is refused with 409). */
export function measurementConflicts(body: KptClaimRequest, toleranceKg: number): InputIssue[] {
  const errors: InputIssue[] = [];
  const { total, dailyLogs } = body.fuelMeasurements;
  const sum = preciseSum(dailyLogs);
  // Written so that a non-finite sum (NaN fails every comparison) is a conflict, never a pass.
  if (!Number.isFinite(sum) || !(Math.abs(total - sum) <= toleranceKg)) {
    errors.push({
      path: ['fuelMeasurements', 'total'],
      message: `total ${total} differs from the sum of dailyLogs ${Number(sum.toFixed(6))} by more than ${toleranceKg} kg`,
      rule: 'total-matches-logs',
    });
  }
  const period = body.testPeriod;
  if (period) {
    if (period.endDate < period.startDate) {
      errors.push({ path: ['testPeriod', 'endDate'], message: `endDate ${period.endDate} is before startDate ${period.startDate}`, rule: 'test-period-order' });
    } else {
      const days = inclusiveDays(period.startDate, period.endDate);
      if (days !== dailyLogs.length) {
        errors.push({
          path: ['testPeriod'],
          message: `the period ${period.startDate}..${period.endDate} has ${days} days but there are ${dailyLogs.length} daily logs (one per day)`,
          rule: 'test-period-matches-logs',
        });
      }
    }
    if (period.durationDays !== undefined && period.durationDays !== dailyLogs.length) {
      errors.push({
        path: ['testPeriod', 'durationDays'],
        message: `durationDays ${period.durationDays} differs from the ${dailyLogs.length} daily logs`,
        rule: 'duration-matches-logs',
      });
    }
  }
  return errors;
}

export interface RuleContext {
  /** Rule 5's verdict on the household under the collection's selection design (selection.ts). */
  selection: { passed: boolean; message: string };
  /** The collection holds claims of the other group (not rejected, credential standing). */
  otherGroupPresent: boolean;
  /** One of those claims' test period overlaps this claim's. */
  otherGroupAligned: boolean;
}

export interface RuleOutcome {
  status: ClaimStatus;
  checks: RuleCheck[];
  reasons: ClaimReason[];
}

/** The eight KPT validation rules. Failed rules reject; rules waiting for the other group leave the claim pending. */
export function evaluateKptRules(body: KptClaimRequest, ctx: RuleContext): RuleOutcome {
  const checks: RuleCheck[] = [];
  const check = (rule: RuleId, outcome: RuleCheck['outcome'], message: string) => checks.push({ rule, number: RULES[rule], outcome, message });
  const logs = body.fuelMeasurements.dailyLogs;
  const other = otherGroup(body.testGroup);
  const ef = body.externalFactors;

  // Rules 1-3 are enforced on the request (400 / 409); a stored claim has passed them.
  check('min-duration', 'passed', `${logs.length} daily measurements (minimum ${MIN_TEST_DAYS})`);
  check('total-matches-logs', 'passed', 'total equals the sum of dailyLogs within tolerance');
  check('positive-values', 'passed', 'every measurement is a positive number');

  if (ef?.season?.trim()) check('seasonal-variations-documented', 'passed', `season: ${ef.season}`);
  else check('seasonal-variations-documented', 'failed', 'externalFactors.season is missing: document the season of the test');

  // Evidence a claim carries (a selection-methodology document) is documentation, not proof: the
  // collection's design and draws decide.
  check('random-selection-verified', ctx.selection.passed ? 'passed' : 'failed', ctx.selection.message);

  if (ctx.otherGroupPresent) check('control-group-present', 'passed', `the collection holds ${other} group claims`);
  else check('control-group-present', 'waiting', `no ${other} group claim in the collection yet`);

  if (!body.testPeriod) check('timing-aligned', 'failed', 'testPeriod is missing, so timing cannot be aligned between the groups');
  else if (ctx.otherGroupAligned) check('timing-aligned', 'passed', `${other} group claims overlap the test period`);
  else check('timing-aligned', 'waiting', `no ${other} group claim overlaps ${body.testPeriod.startDate}..${body.testPeriod.endDate} yet`);

  const missing = (['season', 'culturalEvents', 'occupationalFactors'] as const).filter((k) => {
    const v = ef?.[k];
    return Array.isArray(v) ? v.length === 0 : !v?.trim();
  });
  if (!missing.length) check('external-factors-documented', 'passed', 'season, cultural events and occupational factors documented');
  else check('external-factors-documented', 'failed', `externalFactors lacks ${missing.join(', ')} (use ["none"] when there were none)`);

  const failed = checks.filter((c) => c.outcome === 'failed');
  const waiting = checks.filter((c) => c.outcome === 'waiting');
  const status: ClaimStatus = failed.length ? 'rejected' : waiting.length ? 'pending' : 'verified';
  const reasons = (failed.length ? failed : waiting).map((c) => ({ rule: c.rule, message: c.message }));
  return { status, checks, reasons };
}

/**
 * Whether a claim could be verified at all: its rules evaluated with its household selected and
 * an aligned claim of the other group, the context in which every rule passes most easily. A
 * claim for which this is false is never verified, whatever the collection holds.
 */
export function canBeVerified(body: KptClaimRequest): boolean {
  return evaluateKptRules(body, { selection: { passed: true, message: '' }, otherGroupPresent: true, otherGroupAligned: true }).status === 'verified';
}
