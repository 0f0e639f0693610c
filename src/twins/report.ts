// The KPT campaign report: per group households, household-days, mean and SD of
// kg/household/day; savings; Welch's unpaired t-test; the 90% confidence interval; the
// precision reached; and the sample size a 90/10 target (90% confidence, 10% precision) needs,
// n = (z * CV / e)^2 (Gold Standard RECH / SMEC practice).
import jStat from 'jstat';
import type { GroupStatistics, KptReport, TestGroup } from '../../generated/openapi/types.gen.ts';

export interface ReportClaim {
  household: string;
  group: TestGroup;
  days: number;
  totalKg: number;
}

const CONFIDENCE = 0.9;
const TARGET_PRECISION = 0.1;
const Z_90 = 1.6448536269514722;

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sampleVariance = (xs: number[]) => {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
};
const round = (x: number, digits = 6) => Number(x.toFixed(digits));

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
    sdKgPerHouseholdDay: values.length > 1 ? round(Math.sqrt(sampleVariance(values))) : null,
    values: values.map((v) => round(v)),
  };
}

function sampleSizeFor(values: number[]): number | null {
  if (values.length < 2) return null;
  const m = mean(values);
  if (m <= 0) return null;
  const cv = Math.sqrt(sampleVariance(values)) / m;
  return Math.max(2, Math.ceil((Z_90 * cv / TARGET_PRECISION) ** 2));
}

export function buildKptReport(collectionId: string, claims: ReportClaim[], now = new Date()): KptReport {
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
  return {
    collectionId,
    generatedAt: now.toISOString(),
    claimsCounted: claims.length,
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
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const fmt = (x: number | null, digits = 2) => (x === null ? 'n/a' : x.toFixed(digits));

/**
 * A standalone SVG: each group's household kg/day values as dots on a shared axis, with the
 * group mean and a +-1 SD band, and the headline figures as text.
 */
export function renderReportSvg(r: KptReport): string {
  const W = 720;
  const H = 300;
  const left = 130;
  const right = W - 30;
  const all = [...r.reference.values, ...r.intervention.values];
  const max = all.length ? Math.max(...all) * 1.1 : 1;
  const x = (v: number) => left + (v / max) * (right - left);
  const rows: [string, typeof r.reference, string, number][] = [
    ['Reference', r.reference, '#c0392b', 110],
    ['Intervention', r.intervention, '#27ae60', 180],
  ];
  const parts: string[] = [];
  parts.push(`<text x="${W / 2}" y="28" text-anchor="middle" font-size="16" font-weight="bold">${esc(`KPT ${r.collectionId}: fuel use, kg per household per day`)}</text>`);
  parts.push(
    `<text x="${W / 2}" y="50" text-anchor="middle" font-size="12">${esc(
      `savings ${fmt(r.savings.kgPerHouseholdDay, 3)} kg/hh/day (${fmt(r.savings.percent, 1)}%), 90% CI ${r.savings.confidenceInterval90 ? r.savings.confidenceInterval90.map((v) => v.toFixed(3)).join(' to ') : 'n/a'}, Welch p=${fmt(r.welch.pValue, 4)}`,
    )}</text>`,
  );
  for (const [label, g, colour, y] of rows) {
    parts.push(`<text x="${left - 10}" y="${y + 4}" text-anchor="end" font-size="13">${esc(`${label} (n=${g.households})`)}</text>`);
    parts.push(`<line x1="${left}" y1="${y}" x2="${right}" y2="${y}" stroke="#ddd"/>`);
    if (g.meanKgPerHouseholdDay !== null && g.sdKgPerHouseholdDay !== null) {
      const lo = Math.max(0, g.meanKgPerHouseholdDay - g.sdKgPerHouseholdDay);
      const hi = g.meanKgPerHouseholdDay + g.sdKgPerHouseholdDay;
      parts.push(`<rect x="${x(lo).toFixed(1)}" y="${y - 16}" width="${(x(hi) - x(lo)).toFixed(1)}" height="32" fill="${colour}" fill-opacity="0.15"><title>mean +- 1 SD</title></rect>`);
    }
    g.values.forEach((v, i) => {
      const jitter = ((i * 7) % 13) - 6;
      parts.push(`<circle cx="${x(v).toFixed(1)}" cy="${y + jitter}" r="4" fill="${colour}" fill-opacity="0.7"><title>${v.toFixed(3)} kg/day</title></circle>`);
    });
    if (g.meanKgPerHouseholdDay !== null) {
      const mx = x(g.meanKgPerHouseholdDay).toFixed(1);
      parts.push(`<line x1="${mx}" y1="${y - 20}" x2="${mx}" y2="${y + 20}" stroke="${colour}" stroke-width="3"><title>mean ${g.meanKgPerHouseholdDay.toFixed(3)}</title></line>`);
    }
  }
  const axisY = 230;
  parts.push(`<line x1="${left}" y1="${axisY}" x2="${right}" y2="${axisY}" stroke="#333"/>`);
  for (let i = 0; i <= 5; i++) {
    const v = (max / 5) * i;
    parts.push(`<line x1="${x(v).toFixed(1)}" y1="${axisY}" x2="${x(v).toFixed(1)}" y2="${axisY + 5}" stroke="#333"/>`);
    parts.push(`<text x="${x(v).toFixed(1)}" y="${axisY + 18}" text-anchor="middle" font-size="11">${v.toFixed(2)}</text>`);
  }
  parts.push(`<text x="${(left + right) / 2}" y="${axisY + 38}" text-anchor="middle" font-size="12">kg of fuel per household per day (dots: households; bar: mean; band: +-1 SD)</text>`);
  parts.push(
    `<text x="${W / 2}" y="${H - 4}" text-anchor="middle" font-size="11">${esc(
      `precision ${r.precision.relative === null ? 'n/a' : (r.precision.relative * 100).toFixed(1) + '%'} (90/10 ${r.precision.meets90_10 ? 'met' : 'not met'}); households needed: reference ${r.sampleSize.referenceHouseholdsNeeded ?? 'n/a'}, intervention ${r.sampleSize.interventionHouseholdsNeeded ?? 'n/a'}`,
    )}</text>`,
  );
  return `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 10}" viewBox="0 0 ${W} ${H + 10}" font-family="sans-serif" role="img" aria-label="${esc(`KPT report ${r.collectionId}`)}">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}
