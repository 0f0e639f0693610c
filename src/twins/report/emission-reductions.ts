// Emission reductions from a campaign's fuel savings, per Gold Standard TPDDTEC v3.1:
// ER = N · U · (B − P) · D · NCV · (fNRB · EF_CO2 + EF_nonCO2). When the savings miss 90/10
// precision, B and P are the conservative bounds of each group's one-sided 90% confidence
// interval, as Gold Standard's SMEC and RECH do; never negative credits.
import jStat from 'jstat';
import type { EmissionParameters, EmissionReductions, ErInput } from '../../../generated/openapi/types.gen.ts';
import { mean, round, sampleSd } from './statistics.ts';

export const METHODOLOGY = 'Gold Standard TPDDTEC (Technologies and Practices to Displace Decentralized Thermal Energy Consumption), RECH/SMEC-style conservative emission reductions';
export const METHODOLOGY_VERSION = '3.1';
const FORMULA = 'ER = N · U · (B − P) · D · NCV · (fNRB · EF_CO2 + EF_nonCO2)';
export const DEFAULT_DAYS_PER_YEAR = 365;

const IPCC = '2006 IPCC Guidelines for National Greenhouse Gas Inventories, Vol. 2 (Energy)';
/** IPCC AR5 (WG1, ch. 8, table 8.7) 100-year GWPs, without climate-carbon feedbacks. */
const GWP = { ch4: 28, n2o: 265, source: 'IPCC AR5 GWP-100 (CH4 28, N2O 265)' };

interface FuelDefaults {
  ncvTJPerGg: number;
  ncvSource: string;
  efCo2KgPerTJ: number;
  efCo2Source: string;
  ch4KgPerTJ: number;
  n2oKgPerTJ: number;
  nonCo2Source: string;
}

const IPCC_DEFAULTS: Record<EmissionParameters['fuelType'], FuelDefaults> = {
  fuelwood: {
    ncvTJPerGg: 15.6,
    ncvSource: `${IPCC}, ch. 1, table 1.2: wood/wood waste, 15.6 TJ/Gg`,
    efCo2KgPerTJ: 112000,
    efCo2Source: `${IPCC}, ch. 1, table 1.4: wood/wood waste, 112,000 kg CO2/TJ`,
    ch4KgPerTJ: 300,
    n2oKgPerTJ: 4,
    nonCo2Source: `${IPCC}, ch. 2, table 2.5 (residential): wood/wood waste CH4 300 kg/TJ, N2O 4 kg/TJ; ${GWP.source}`,
  },
  charcoal: {
    ncvTJPerGg: 29.5,
    ncvSource: `${IPCC}, ch. 1, table 1.2: charcoal, 29.5 TJ/Gg`,
    efCo2KgPerTJ: 112000,
    efCo2Source: `${IPCC}, ch. 1, table 1.4: charcoal, 112,000 kg CO2/TJ`,
    ch4KgPerTJ: 200,
    n2oKgPerTJ: 1,
    nonCo2Source: `${IPCC}, ch. 2, table 2.5 (residential): charcoal CH4 200 kg/TJ, N2O 1 kg/TJ; ${GWP.source}`,
  },
};

const DECLARED = 'declared';

/** The bound of a group's one-sided 90% confidence interval: mean ∓ t(0.90, n − 1) · SD / √n; null for fewer than 2 values. */
function oneSidedBound90(values: number[], side: 'lower' | 'upper'): number | null {
  if (values.length < 2) return null;
  const half = jStat.studentt.inv(0.9, values.length - 1) * sampleSd(values) / Math.sqrt(values.length);
  return mean(values) + (side === 'lower' ? -half : half);
}

/** The parameters with their defaults filled in (as the HTTP validator fills them). */
export function withParameterDefaults(p: EmissionParameters): EmissionParameters {
  return { ...p, daysPerYear: p.daysPerYear ?? DEFAULT_DAYS_PER_YEAR };
}

/** What the reductions are computed from: each household's kg/day per group, and whether the savings meet 90/10. */
export interface SavingsFacts {
  baseline: number[];
  project: number[];
  meetsPrecision: boolean;
}

/** The emission reductions of a campaign's fuel savings, or why there are none. */
export function emissionReductions({ baseline, project, meetsPrecision }: SavingsFacts, parameters: EmissionParameters | undefined): EmissionReductions {
  if (!parameters) return { notComputed: 'the collection sets no emissionParameters (PATCH /v1/collections/{id})' };
  if (!baseline.length || !project.length) return { notComputed: 'the reference (baseline) and intervention (project) groups each need households' };

  const baselineLower = oneSidedBound90(baseline, 'lower');
  const projectUpper = oneSidedBound90(project, 'upper');
  if (!meetsPrecision && (baselineLower === null || projectUpper === null)) {
    return { notComputed: 'the savings miss 90/10 precision and a group has a single household, so it has no conservative bound' };
  }
  const B = meetsPrecision ? mean(baseline) : baselineLower!;
  const P = meetsPrecision ? mean(project) : projectUpper!;
  const savings = B - P;

  const d = IPCC_DEFAULTS[parameters.fuelType];
  const declaredOr = (value: number | undefined, fallback: number, source: string, unit: string): ErInput =>
    value === undefined ? { value: fallback, unit, source } : { value, unit, source: DECLARED };
  const nonCo2Default = d.ch4KgPerTJ * GWP.ch4 + d.n2oKgPerTJ * GWP.n2o;
  const inputs = {
    stovesInProject: { value: parameters.stovesInProject, unit: 'stoves', source: DECLARED },
    usageRate: { value: parameters.usageRate, unit: 'fraction of stoves in use', source: DECLARED },
    daysPerYear: declaredOr(parameters.daysPerYear, DEFAULT_DAYS_PER_YEAR, 'default (365 days a year)', 'days/year'),
    fNRB: { value: parameters.fNRB, unit: 'fraction', source: DECLARED },
    ncv: declaredOr(parameters.ncvTJPerGg, d.ncvTJPerGg, d.ncvSource, 'TJ/Gg'),
    efCo2: declaredOr(parameters.efCo2KgPerTJ, d.efCo2KgPerTJ, d.efCo2Source, 'kg CO2/TJ'),
    efNonCo2: declaredOr(parameters.efNonCo2KgCo2ePerTJ, nonCo2Default, d.nonCo2Source, 'kg CO2e/TJ'),
  };

  // kg/household-day · days → t (/1000) → Gg (/1000) · TJ/Gg → TJ · kg/TJ → kg (/1000) → t.
  const credited = Math.max(0, savings);
  const fuelSavedTonnes = inputs.usageRate.value * credited * inputs.daysPerYear.value / 1000;
  const energySavedTJ = (fuelSavedTonnes / 1000) * inputs.ncv.value;
  const perStove = energySavedTJ * (inputs.fNRB.value * inputs.efCo2.value + inputs.efNonCo2.value) / 1000;

  return {
    methodology: METHODOLOGY,
    methodologyVersion: METHODOLOGY_VERSION,
    formula: FORMULA,
    fuelType: parameters.fuelType,
    inputs,
    fuel: {
      basis: meetsPrecision ? 'means' : 'conservative-bounds',
      reason: meetsPrecision
        ? 'the savings meet 90/10 precision: the group means are used'
        : 'the savings miss 90/10 precision: the baseline at the lower and the project at the upper bound of its one-sided 90% confidence interval are used',
      meanBaselineKgPerHouseholdDay: round(mean(baseline)),
      meanProjectKgPerHouseholdDay: round(mean(project)),
      baselineLowerBound90: baselineLower === null ? null : round(baselineLower),
      projectUpperBound90: projectUpper === null ? null : round(projectUpper),
      baselineKgPerHouseholdDay: round(B),
      projectKgPerHouseholdDay: round(P),
      savingsKgPerHouseholdDay: round(savings),
    },
    perStoveYear: { fuelSavedTonnes: round(fuelSavedTonnes), energySavedTJ: round(energySavedTJ, 9), tCo2e: round(perStove) },
    totalTCo2ePerYear: round(perStove * inputs.stovesInProject.value, 4),
    ...(savings > 0 ? {} : { note: 'B − P is not above 0: no emission reductions (never negative)' }),
  };
}
