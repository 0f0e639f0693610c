// The KPT campaign report: per group households, household-days, mean and SD of
// kg/household/day; savings; Welch's unpaired t-test; the 90% confidence interval; the
// precision reached; and the sample size a 90/10 target (90% confidence, 10% precision) needs,
// n = (z * CV / e)^2 (Gold Standard RECH / SMEC practice); and the emission reductions of the
// savings (emission-reductions.ts).
import jStat from 'jstat';
import type { EmissionParameters, EmissionReductions, ErInput, GroupStatistics, KptReport, TestGroup } from '../../../generated/openapi/types.gen.ts';
import { emissionReductions } from './emission-reductions.ts';
import { mean, round, sampleSd, sampleVariance } from './statistics.ts';

export interface ReportClaim {
  household: string;
  group: TestGroup;
  days: number;
  totalKg: number;
}

const CONFIDENCE = 0.9;
const TARGET_PRECISION = 0.1;
const Z_90 = 1.6448536269514722;

/** A report over claims whose collection declares no design (none passes rule 5). */
const NO_SELECTION: KptReport['selection'] = { design: null, draws: [], claimsHeldApart: 0 };


/** One value per household: its total kg over its total days (several claims of one household are pooled). */
function householdMeans(claims: ReportClaim[], group: TestGroup): { values: number[]; days: number } {
  const byHousehold = new Map<string, { kg: number; days: number }>();
  for (const c of claims.filter((x) => x.group === group)) {
    const h = byHousehold.get(c.household) ?? { kg: 0, days: 0 };
    h.kg += c.totalKg;
    h.days += c.days;
    byHousehold.set(c.household, h);
  }
  const values = [...byHousehold.values()].map((h) => h.kg / h.days);
  return { values, days: [...byHousehold.values()].reduce((a, h) => a + h.days, 0) };
}

function groupStatistics(values: number[], days: number): GroupStatistics {
  return {
    households: values.length,
    householdDays: days,
    meanKgPerHouseholdDay: values.length ? round(mean(values)) : null,
    sdKgPerHouseholdDay: values.length > 1 ? round(sampleSd(values)) : null,
    values: values.map((v) => round(v)),
  };
}

function sampleSizeFor(values: number[]): number | null {
  if (values.length < 2) return null;
  const m = mean(values);
  if (m <= 0) return null;
  const cv = sampleSd(values) / m;
  return Math.max(2, Math.ceil((Z_90 * cv / TARGET_PRECISION) ** 2));
}

/**
 * The report over `claims` (verified, credentials standing); `withdrawn` counts the verified
 * claims left out because their credential is revoked or suspended.
 */
export function buildKptReport(
  collectionId: string,
  claims: ReportClaim[],
  { withdrawn = 0, now = new Date(), selection = NO_SELECTION, emissionParameters }:
  { withdrawn?: number; now?: Date; selection?: KptReport['selection']; emissionParameters?: EmissionParameters } = {},
): KptReport {
  const ref = householdMeans(claims, 'reference');
  const int = householdMeans(claims, 'intervention');
  const reference = groupStatistics(ref.values, ref.days);
  const intervention = groupStatistics(int.values, int.days);

  let savingsKg: number | null = null;
  let percent: number | null = null;
  let ci: [number, number] | null = null;
  let t: number | null = null;
  let df: number | null = null;
  let p: number | null = null;
  let relative: number | null = null;
  if (ref.values.length && int.values.length) {
    const mr = mean(ref.values);
    const mi = mean(int.values);
    savingsKg = mr - mi;
    percent = mr > 0 ? (savingsKg / mr) * 100 : null;
  }
  if (ref.values.length > 1 && int.values.length > 1 && savingsKg !== null) {
    const vr = sampleVariance(ref.values) / ref.values.length;
    const vi = sampleVariance(int.values) / int.values.length;
    const se = Math.sqrt(vr + vi);
    if (se > 0) {
      t = savingsKg / se;
      // Welch-Satterthwaite degrees of freedom.
      df = (vr + vi) ** 2 / (vr ** 2 / (ref.values.length - 1) + vi ** 2 / (int.values.length - 1));
      p = 2 * (1 - jStat.studentt.cdf(Math.abs(t), df));
      const half = jStat.studentt.inv(1 - (1 - CONFIDENCE) / 2, df) * se;
      ci = [round(savingsKg - half), round(savingsKg + half)];
      relative = savingsKg !== 0 ? Math.abs(half / savingsKg) : null;
    }
  }
  const report: Omit<KptReport, 'emissionReductions'> = {
    collectionId,
    generatedAt: now.toISOString(),
    selection,
    claimsCounted: claims.length,
    claimsWithdrawn: withdrawn,
    reference,
    intervention,
    savings: {
      kgPerHouseholdDay: savingsKg === null ? null : round(savingsKg),
      percent: percent === null ? null : round(percent, 4),
      confidenceInterval90: ci,
    },
    welch: { t: t === null ? null : round(t), degreesOfFreedom: df === null ? null : round(df, 4), pValue: p === null ? null : round(p, 8) },
    confidenceLevel: CONFIDENCE,
    precision: { relative: relative === null ? null : round(relative, 6), meets90_10: relative !== null && savingsKg! > 0 && relative <= TARGET_PRECISION },
    sampleSize: { target: '90/10', referenceHouseholdsNeeded: sampleSizeFor(ref.values), interventionHouseholdsNeeded: sampleSizeFor(int.values) },
  };
  const savingsFacts = { baseline: ref.values, project: int.values, meetsPrecision: report.precision.meets90_10 };
  return { ...report, emissionReductions: emissionReductions(savingsFacts, emissionParameters) };
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const fmt = (x: number | null, digits = 3) => (x === null ? 'n/a' : x.toFixed(digits));

/** A p-value as journals print it: "p < 0.001" below that, else three significant digits. */
export function formatPValue(p: number | null): string {
  if (p === null) return 'p = n/a';
  if (p < 0.001) return 'p < 0.001';
  return `p = ${p.toPrecision(3)}`;
}

/** Axis ticks from 0 at a step of 1, 2 or 5 times a power of ten, the last at or above `max`. */
export function niceTicks(max: number, target = 5): number[] {
  const top = max > 0 && Number.isFinite(max) ? max : 1;
  const raw = top / target;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  const count = Math.ceil(top / step - 1e-9);
  return Array.from({ length: count + 1 }, (_, i) => Number((i * step).toFixed(decimals)));
}

const tickLabel = (ticks: number[]) => {
  const step = ticks[1]! - ticks[0]!;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return (v: number) => v.toFixed(decimals);
};

const sourceLabel = (input: ErInput) => (input.source === 'declared' ? 'declared' : input.source.startsWith('2006 IPCC') ? 'IPCC 2006 default' : input.source);

/** The emission reductions as the chart prints them: the result, the fuel figures used and every input with where it comes from. */
function emissionReductionLines(er: EmissionReductions): string[] {
  if ('notComputed' in er) return ['Emission reductions: not computed', `(${er.notComputed})`];
  const { inputs: i, fuel } = er;
  const basis = fuel.basis === 'means'
    ? '90/10 met: B and P are the group means'
    : "90/10 not met: B at the baseline's one-sided 90% lower bound, P at the project's upper bound";
  const input = (name: string, x: ErInput) => `${name} ${x.value} ${x.unit} (${sourceLabel(x)})`;
  return [
    `Emission reductions: ${er.perStoveYear.tCo2e.toFixed(4)} tCO2e per stove-year; ${er.totalTCo2ePerYear.toFixed(2)} tCO2e a year for ${i.stovesInProject.value} stoves`,
    `Gold Standard TPDDTEC v${er.methodologyVersion}: ${er.formula}`,
    `Fuel (${er.fuelType}), ${basis}`,
    `B = ${fuel.baselineKgPerHouseholdDay.toFixed(3)}, P = ${fuel.projectKgPerHouseholdDay.toFixed(3)}, B − P = ${fuel.savingsKgPerHouseholdDay.toFixed(3)} kg/household/day${er.note ? ` (${er.note})` : ''}`,
    `N = ${i.stovesInProject.value} stoves, U = ${i.usageRate.value}, D = ${i.daysPerYear.value} days/year (${sourceLabel(i.daysPerYear)}), fNRB = ${i.fNRB.value}`,
    `${input('NCV', i.ncv)}, ${input('EF_CO2', i.efCo2)}`,
    `${input('EF_nonCO2', i.efNonCo2)}${i.efNonCo2.source === 'declared' ? '' : ', CH4 and N2O with AR5 GWP-100'}`,
  ];
}

/**
 * A standalone SVG, readable on paper: each group's household kg/day values as dots on a shared
 * axis with the group mean and a mean ± 1 SD band, every headline figure printed as text (hover
 * titles only repeat them), and a footer that keeps apart the two sample-size figures: the
 * precision of the savings' 90% CI, and the households each group's own mean needs for 90/10;
 * below, the emission reductions with every input they are computed from.
 */
export function renderReportSvg(r: KptReport): string {
  const W = 760;
  const left = 30;
  const right = W - 30;
  const all = [...r.reference.values, ...r.intervention.values];
  const ticks = niceTicks(all.length ? Math.max(...all) : 0);
  const max = ticks[ticks.length - 1]!;
  const label = tickLabel(ticks);
  const x = (v: number) => left + (v / max) * (right - left);
  const text = (px: number, py: number, content: string, attrs = '') =>
    `<text x="${px.toFixed(1)}" y="${py}" ${/font-size=/.test(attrs) ? attrs : `font-size="13" ${attrs}`.trim()}>${esc(content)}</text>`;
  const parts: string[] = [];

  parts.push(text(left, 28, 'KPT report: fuel use, kg per household per day', 'font-size="17" font-weight="bold"'));
  const withdrawn = r.claimsWithdrawn ? ` (${r.claimsWithdrawn} withdrawn, not counted)` : '';
  parts.push(text(left, 48, `Collection ${r.collectionId} · ${r.claimsCounted} verified claims${withdrawn} · generated ${r.generatedAt.slice(0, 10)}`, 'fill="#444"'));
  const ci = r.savings.confidenceInterval90;
  parts.push(text(left, 76,
    `Savings (reference − intervention): ${fmt(r.savings.kgPerHouseholdDay)} kg/household/day (${fmt(r.savings.percent, 1)}%), 90% CI ${ci ? `${fmt(ci[0])} to ${fmt(ci[1])}` : 'n/a'}`,
    'font-size="14" font-weight="bold"'));
  parts.push(text(left, 96,
    `Welch's t-test: t = ${fmt(r.welch.t, 2)}, df = ${fmt(r.welch.degreesOfFreedom, 1)}, ${formatPValue(r.welch.pValue)} (two-sided)`));

  const rows: [string, typeof r.reference, string, number][] = [
    ['Reference', r.reference, '#b03a2e', 134],
    ['Intervention', r.intervention, '#1e8449', 226],
  ];
  for (const [name, g, colour, top] of rows) {
    const y = top + 34;
    const summary = g.meanKgPerHouseholdDay === null
      ? 'no households'
      : `mean ${fmt(g.meanKgPerHouseholdDay)} ± ${fmt(g.sdKgPerHouseholdDay)} SD kg/household/day`;
    parts.push(text(left, top,
      `${name}: ${g.households} households, ${g.householdDays} household-days; ${summary}`,
      `font-weight="bold" fill="${colour}"`));
    parts.push(`<line x1="${left}" y1="${y}" x2="${right}" y2="${y}" stroke="#ddd"/>`);
    if (g.meanKgPerHouseholdDay !== null && g.sdKgPerHouseholdDay !== null) {
      const lo = Math.max(0, g.meanKgPerHouseholdDay - g.sdKgPerHouseholdDay);
      const hi = g.meanKgPerHouseholdDay + g.sdKgPerHouseholdDay;
      parts.push(`<rect x="${x(lo).toFixed(1)}" y="${y - 16}" width="${(x(hi) - x(lo)).toFixed(1)}" height="32" fill="${colour}" fill-opacity="0.15"><title>mean ± 1 SD: ${fmt(lo)} to ${fmt(hi)}</title></rect>`);
    }
    g.values.forEach((v, i) => {
      const jitter = ((i * 7) % 13) - 6;
      parts.push(`<circle cx="${x(v).toFixed(1)}" cy="${y + jitter}" r="4" fill="${colour}" fill-opacity="0.7"><title>${fmt(v)} kg/household/day</title></circle>`);
    });
    if (g.meanKgPerHouseholdDay !== null) {
      const mx = x(g.meanKgPerHouseholdDay);
      parts.push(`<line x1="${mx.toFixed(1)}" y1="${y - 20}" x2="${mx.toFixed(1)}" y2="${y + 20}" stroke="${colour}" stroke-width="3"/>`);
      // Beside the marker, on the side with room.
      const onRight = mx < (left + right) / 2;
      parts.push(text(mx + (onRight ? 6 : -6), y + 32, `mean ${fmt(g.meanKgPerHouseholdDay)}`,
        `font-size="12" fill="${colour}" text-anchor="${onRight ? 'start' : 'end'}"`));
    }
  }

  const axisY = 304;
  parts.push(`<line x1="${left}" y1="${axisY}" x2="${right}" y2="${axisY}" stroke="#333"/>`);
  for (const v of ticks) {
    const tx = x(v);
    parts.push(`<line x1="${tx.toFixed(1)}" y1="${axisY}" x2="${tx.toFixed(1)}" y2="${axisY + 5}" stroke="#333"/>`);
    parts.push(text(tx, axisY + 19, label(v), 'font-size="12" text-anchor="middle"'));
  }
  parts.push(text((left + right) / 2, axisY + 40,
    'kg of fuel per household per day (dots: households; bar: group mean; band: mean ± 1 SD)', 'font-size="12" text-anchor="middle"'));

  const rel = r.precision.relative;
  parts.push(text(left, axisY + 72,
    `Savings: 90% CI half-width ${rel === null ? 'n/a' : `${(rel * 100).toFixed(1)}%`} of the savings; 90/10 target (at most 10%) ${r.precision.meets90_10 ? 'met' : 'not met'}.`,
    'font-size="12"'));
  const need = (n: number | null, have: number) => `${n ?? 'n/a'} households needed (${have} present)`;
  parts.push(text(left, axisY + 90,
    `Each group's own mean at 90/10: reference ${need(r.sampleSize.referenceHouseholdsNeeded, r.reference.households)}, intervention ${need(r.sampleSize.interventionHouseholdsNeeded, r.intervention.households)}.`,
    'font-size="12"'));
  const erLines = emissionReductionLines(r.emissionReductions);
  erLines.forEach((line, i) => parts.push(text(left, axisY + 122 + i * 18, line, i === 0 ? 'font-size="13" font-weight="bold"' : 'font-size="12"')));
  const H = axisY + 122 + erLines.length * 18;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" role="img" aria-label="${esc(`KPT report ${r.collectionId}`)}">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}
