// Emission reductions in the KPT campaign report (Gold Standard TPDDTEC v3.1), against two
// worked examples computed by hand below, every intermediate written out; t quantiles from
// scipy.stats.t.ppf.
import { expect } from 'chai';
import { createCollection, getCollection, getCollectionReport, getCollectionReportChart, submitClaim, updateCollection } from '../../generated/openapi/sdk.gen.ts';
import type { EmissionParameters, EmissionReductions, Problem } from '../../generated/openapi/types.gen.ts';
import { buildKptReport, renderReportSvg, type ReportClaim } from '../../src/twins/report/report.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { CENSUS_DESIGN, createFramedCollection, kptClaim, type TwinsHarness, startTwinsHarness } from './fixtures.ts';

const TOL = 1e-6;

// Case A: 90/10 met, so the means are used. Fuelwood, IPCC 2006 defaults.
const A = {
  reference: [3.0, 3.1, 2.9, 3.0],
  intervention: [1.0, 1.05, 0.95, 1.0],
  parameters: { stovesInProject: 1000, fuelType: 'fuelwood', fNRB: 0.3, usageRate: 0.9, daysPerYear: 365 } satisfies EmissionParameters,
  // mean B = (3.0 + 3.1 + 2.9 + 3.0) / 4 = 12.0 / 4 = 3.0
  meanB: 3.0,
  // mean P = (1.0 + 1.05 + 0.95 + 1.0) / 4 = 4.0 / 4 = 1.0
  meanP: 1.0,
  // SD B = sqrt((0 + 0.01 + 0.01 + 0) / 3) = sqrt(0.0066667) = 0.0816497
  sdB: 0.08164966,
  // SD P = sqrt((0 + 0.0025 + 0.0025 + 0) / 3) = sqrt(0.0016667) = 0.0408248
  sdP: 0.04082483,
  // Welch: se = sqrt(0.0066667/4 + 0.0016667/4) = sqrt(0.0020833) = 0.0456435;
  // df = 0.0020833² / (0.0016667²/3 + 0.00041667²/3) = 4.411765; t(0.95, 4.411765) = 2.075943;
  // half-width = 2.075943 · 0.0456435 = 0.0947534; precision = 0.0947534 / 2.0 = 0.0473767 ≤ 0.10: met.
  precision: 0.0473767,
  // One-sided 90% bounds (reported, not used): t(0.90, 3) = 1.637744;
  // B lower = 3.0 − 1.637744 · 0.0816497 / 2 = 3.0 − 0.0668606 = 2.9331394
  lowerB: 2.9331394,
  // P upper = 1.0 + 1.637744 · 0.0408248 / 2 = 1.0 + 0.0334303 = 1.0334303
  upperP: 1.0334303,
  // Used: B − P = 3.0 − 1.0 = 2.0 kg/household-day
  savings: 2.0,
  // fuel saved per stove-year = U · (B − P) · D / 1000 = 0.9 · 2.0 · 365 / 1000 = 0.657 t
  fuelSavedTonnes: 0.657,
  // energy = 0.657 t / 1000 = 0.000657 Gg · 15.6 TJ/Gg = 0.0102492 TJ
  energySavedTJ: 0.0102492,
  // EF_nonCO2 = 300 kg CH4/TJ · 28 + 4 kg N2O/TJ · 265 = 8400 + 1060 = 9460 kg CO2e/TJ
  efNonCo2: 9460,
  // fNRB · EF_CO2 + EF_nonCO2 = 0.3 · 112000 + 9460 = 33600 + 9460 = 43060 kg CO2e/TJ
  // per stove-year = 0.0102492 TJ · 43060 kg/TJ / 1000 = 441.330552 kg / 1000 = 0.441330552 t
  perStoveYear: 0.441331,
  // total = 1000 stoves · 0.441330552 = 441.330552 tCO2e
  total: 441.3306,
};

// Case B: 90/10 not met, so the conservative bounds are used. Charcoal, NCV declared (28 TJ/Gg).
const B = {
  reference: [2.5, 2.8, 3.0, 2.7, 2.9],
  intervention: [1.5, 1.7, 1.4, 1.8],
  parameters: { stovesInProject: 500, fuelType: 'charcoal', fNRB: 0.5, usageRate: 0.8, daysPerYear: 300, ncvTJPerGg: 28 } satisfies EmissionParameters,
  // mean B = 13.9 / 5 = 2.78; mean P = 6.4 / 4 = 1.6
  meanB: 2.78,
  meanP: 1.6,
  // SD B = sqrt((0.0784 + 0.0004 + 0.0484 + 0.0064 + 0.0144) / 4) = sqrt(0.148 / 4) = sqrt(0.037) = 0.1923538
  sdB: 0.1923538,
  // SD P = sqrt((0.01 + 0.01 + 0.04 + 0.04) / 3) = sqrt(0.1 / 3) = sqrt(0.0333333) = 0.1825742
  sdP: 0.1825742,
  // Welch: se = sqrt(0.037/5 + 0.0333333/4) = sqrt(0.0074 + 0.0083333) = 0.1254326; df = 6.719604;
  // t(0.95, 6.719604) = 1.906540; half-width = 0.2391423; precision = 0.2391423 / 1.18 = 0.2026630 > 0.10: not met.
  precision: 0.202663,
  // t(0.90, 4) = 1.533206; B lower = 2.78 − 1.533206 · 0.1923538 / sqrt(5) = 2.78 − 1.533206 · 0.0860233 = 2.78 − 0.1318914 = 2.6481086
  lowerB: 2.6481086,
  // t(0.90, 3) = 1.637744; P upper = 1.6 + 1.637744 · 0.1825742 / 2 = 1.6 + 1.637744 · 0.0912871 = 1.6 + 0.1495049 = 1.7495049
  upperP: 1.7495049,
  // Used: B − P = 2.6481086 − 1.7495049 = 0.8986037 kg/household-day
  savings: 0.8986037,
  // fuel saved per stove-year = 0.8 · 0.8986037 · 300 / 1000 = 0.2156649 t
  fuelSavedTonnes: 0.2156649,
  // energy = 0.0002156649 Gg · 28 TJ/Gg = 0.0060386 TJ
  energySavedTJ: 0.0060386168,
  // EF_nonCO2 = 200 · 28 + 1 · 265 = 5600 + 265 = 5865 kg CO2e/TJ
  efNonCo2: 5865,
  // fNRB · EF_CO2 + EF_nonCO2 = 0.5 · 112000 + 5865 = 56000 + 5865 = 61865 kg CO2e/TJ
  // per stove-year = 0.0060386168 · 61865 / 1000 = 0.3735790 t
  perStoveYear: 0.373579,
  // total = 500 · 0.3735790 = 186.7895 tCO2e
  total: 186.7895,
};

function expectWorkedExample(er: EmissionReductions, x: typeof A | typeof B, basis: 'means' | 'conservative-bounds') {
  if ('notComputed' in er) throw new Error(`not computed: ${er.notComputed}`);
  expect(er.methodology).to.match(/^Gold Standard TPDDTEC/);
  expect(er.methodologyVersion).to.equal('3.1');
  expect(er.fuel.basis).to.equal(basis);
  expect(er.fuel.meanBaselineKgPerHouseholdDay).to.be.closeTo(x.meanB, TOL);
  expect(er.fuel.meanProjectKgPerHouseholdDay).to.be.closeTo(x.meanP, TOL);
  expect(er.fuel.baselineLowerBound90).to.be.closeTo(x.lowerB, 2e-6);
  expect(er.fuel.projectUpperBound90).to.be.closeTo(x.upperP, 2e-6);
  expect(er.fuel.savingsKgPerHouseholdDay).to.be.closeTo(x.savings, 2e-6);
  expect(er.perStoveYear.fuelSavedTonnes).to.be.closeTo(x.fuelSavedTonnes, 2e-6);
  expect(er.perStoveYear.energySavedTJ).to.be.closeTo(x.energySavedTJ, 1e-9);
  expect(er.inputs.efNonCo2.value).to.equal(x.efNonCo2);
  expect(er.perStoveYear.tCo2e).to.be.closeTo(x.perStoveYear, 2e-6);
  expect(er.totalTCo2ePerYear).to.be.closeTo(x.total, 1e-3);
  expect(er).not.to.have.property('note');
}

const claims = (reference: number[], intervention: number[]): ReportClaim[] => [
  ...reference.map((v, i) => ({ household: `did:x:r${i}`, group: 'reference' as const, days: 3, totalKg: v * 3 })),
  ...intervention.map((v, i) => ({ household: `did:x:i${i}`, group: 'intervention' as const, days: 3, totalKg: v * 3 })),
];

/**
 * The report of a worked example built from its households: its SDs, precision and whether it
 * meets 90/10 as worked out by hand, and its emission reductions (expectWorkedExample).
 */
function reportedExample(x: typeof A | typeof B, basis: 'means' | 'conservative-bounds') {
  const r = buildKptReport('example', claims(x.reference, x.intervention), { emissionParameters: x.parameters });
  expect(r.reference.sdKgPerHouseholdDay).to.be.closeTo(x.sdB, TOL);
  expect(r.intervention.sdKgPerHouseholdDay).to.be.closeTo(x.sdP, TOL);
  expect(r.precision.relative).to.be.closeTo(x.precision, 1e-6);
  expect(r.precision.meets90_10).to.equal(basis === 'means');
  expectWorkedExample(r.emissionReductions, x, basis);
  return r.emissionReductions as Exclude<EmissionReductions, { notComputed: string }>;
}

describe('emission reductions (report figures)', () => {
  it('uses the group means when the savings meet 90/10 (worked example A)', () => {
    const er = reportedExample(A, 'means');
    expect(er.fuel).to.include({ baselineKgPerHouseholdDay: 3, projectKgPerHouseholdDay: 1 });
    expect(er.inputs.ncv).to.deep.equal({ value: 15.6, unit: 'TJ/Gg', source: '2006 IPCC Guidelines for National Greenhouse Gas Inventories, Vol. 2 (Energy), ch. 1, table 1.2: wood/wood waste, 15.6 TJ/Gg' });
    expect(er.inputs.efCo2).to.include({ value: 112000 });
    expect(er.inputs.efCo2.source).to.include('table 1.4');
    expect(er.inputs.efNonCo2.source).to.include('table 2.5').and.include('CH4 300 kg/TJ, N2O 4 kg/TJ').and.include('AR5');
    expect(er.inputs.fNRB).to.deep.equal({ value: 0.3, unit: 'fraction', source: 'declared' });
  });

  it('uses the baseline lower and project upper one-sided 90% bounds when 90/10 is not met (worked example B)', () => {
    const er = reportedExample(B, 'conservative-bounds');
    expect(er.fuel.baselineKgPerHouseholdDay).to.equal(er.fuel.baselineLowerBound90);
    expect(er.fuel.projectKgPerHouseholdDay).to.equal(er.fuel.projectUpperBound90);
    expect(er.fuel.reason).to.include('miss 90/10');
    expect(er.inputs.ncv).to.deep.equal({ value: 28, unit: 'TJ/Gg', source: 'declared' });
    expect(er.inputs.efNonCo2.source).to.include('charcoal CH4 200 kg/TJ, N2O 1 kg/TJ');
  });

  it('gives 0, never negative reductions, when the savings used are not above 0', () => {
    const r = buildKptReport('c', claims([1.0, 1.2, 0.9], [1.1, 1.3, 1.0]), { emissionParameters: A.parameters });
    const er = r.emissionReductions as Exclude<EmissionReductions, { notComputed: string }>;
    expect(er.fuel.savingsKgPerHouseholdDay).to.be.below(0);
    expect(er.perStoveYear).to.deep.equal({ fuelSavedTonnes: 0, energySavedTJ: 0, tCo2e: 0 });
    expect(er.totalTCo2ePerYear).to.equal(0);
    expect(er.note).to.include('not above 0');
  });

  it('says why the reductions are not computed: no parameters, an empty group, no bound for a single household', () => {
    expect(buildKptReport('d', claims(A.reference, A.intervention)).emissionReductions).to.deep.equal({ notComputed: 'the collection sets no emissionParameters (PATCH /v1/collections/{id})' });
    expect(buildKptReport('d', claims(A.reference, []), { emissionParameters: A.parameters }).emissionReductions).to.have.property('notComputed').that.includes('each need households');
    expect(buildKptReport('d', claims([3.0], [1.0, 1.1]), { emissionParameters: A.parameters }).emissionReductions).to.have.property('notComputed').that.includes('single household');
  });

  it('prints the reductions and every input on the chart', () => {
    const svg = renderReportSvg(buildKptReport('b', claims(B.reference, B.intervention), { emissionParameters: B.parameters }));
    expect(svg).to.include('Emission reductions: 0.3736 tCO2e per stove-year; 186.79 tCO2e a year for 500 stoves');
    expect(svg).to.include('Gold Standard TPDDTEC v3.1: ER = N · U · (B − P) · D · NCV · (fNRB · EF_CO2 + EF_nonCO2)');
    expect(svg).to.include("Fuel (charcoal), 90/10 not met: B at the baseline&#39;s one-sided 90% lower bound, P at the project&#39;s upper bound");
    expect(svg).to.include('B = 2.648, P = 1.750, B − P = 0.899 kg/household/day');
    expect(svg).to.include('N = 500 stoves, U = 0.8, D = 300 days/year (declared), fNRB = 0.5');
    expect(svg).to.include('NCV 28 TJ/Gg (declared), EF_CO2 112000 kg CO2/TJ (IPCC 2006 default)');
    expect(svg).to.include('EF_nonCO2 5865 kg CO2e/TJ (IPCC 2006 default), CH4 and N2O with AR5 GWP-100');
    expect(renderReportSvg(buildKptReport('e', []))).to.include('>Emission reductions: not computed</text>').and.include('>(the collection sets no emissionParameters');
  });
});

forEachDatabase('emission parameters of a collection and the report', (t) => {
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  const submitAll = async (id: string, reference: number[], intervention: number[]) => {
    const submit = (group: 'reference' | 'intervention', kgPerDay: number) =>
      submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: id, testGroup: group, fuelMeasurements: { total: kgPerDay * 3, dailyLogs: [kgPerDay, kgPerDay, kgPerDay] } }) });
    for (const v of reference) expect((await submit('reference', v)).response.status).to.equal(201);
    for (const v of intervention) expect((await submit('intervention', v)).response.status).to.equal(201);
  };
  const report = async (id: string) => {
    const res = await getCollectionReport({ client: h.server.client, auth: h.key, path: { id } });
    expectContractResponse('get', '/v1/collections/{id}/report', { status: 200, headers: res.response.headers, body: res.data });
    return res.data!;
  };

  it('computes the reductions with the parameters a collection is created with (example A), days per year 365 when absent', async () => {
    const { daysPerYear: _, ...withoutDays } = A.parameters;
    const created = await createFramedCollection(h.server, h.key, { id: 'er-a', name: 'ER A', emissionParameters: withoutDays });
    expect(created.response.status).to.equal(201);
    expectContractResponse('post', '/v1/collections', { status: 201, headers: created.response.headers, body: created.data });
    expect(created.data!.emissionParameters).to.deep.equal(A.parameters);
    expect((await getCollection({ client: h.server.client, auth: h.key, path: { id: 'er-a' } })).data!.emissionParameters).to.deep.equal(A.parameters);
    await submitAll('er-a', A.reference, A.intervention);
    expectWorkedExample((await report('er-a')).emissionReductions, A, 'means');
  });

  it('lets the creator set and change the parameters (PATCH), the report following them (example B)', async () => {
    await createFramedCollection(h.server, h.key, { id: 'er-b', name: 'ER B' });
    await submitAll('er-b', B.reference, B.intervention);
    expect((await report('er-b')).emissionReductions).to.have.property('notComputed');

    const patch = (body: Record<string, unknown>, key = h.key) => updateCollection({ client: h.server.client, auth: key, path: { id: 'er-b' }, body });
    const set = await patch({ emissionParameters: { ...B.parameters, fNRB: 0.9 } });
    expect(set.response.status).to.equal(200);
    expectContractResponse('patch', '/v1/collections/{id}', { status: 200, headers: set.response.headers, body: set.data });
    expect(set.data!.emissionParameters!.fNRB).to.equal(0.9);
    expect(set.data!.selectionDesign).to.deep.equal({ ...CENSUS_DESIGN, frameSource: 'draws' });
    const changed = await patch({ emissionParameters: B.parameters });
    expect(changed.data!.emissionParameters).to.deep.equal(B.parameters);
    expectWorkedExample((await report('er-b')).emissionReductions, B, 'conservative-bounds');

    const chart = await getCollectionReportChart({ client: h.server.client, auth: h.key, path: { id: 'er-b' }, parseAs: 'text' });
    expect(chart.data).to.include('186.79 tCO2e a year for 500 stoves').and.include('NCV 28 TJ/Gg (declared)');

    // A change refused for another of its fields changes no parameter either (one transaction).
    const refused = await patch({ emissionParameters: A.parameters, selectionDesign: CENSUS_DESIGN });
    expect(refused.response.status).to.equal(409);
    expect((await getCollection({ client: h.server.client, auth: h.key, path: { id: 'er-b' } })).data!.emissionParameters).to.deep.equal(B.parameters);
    const forbidden = await patch({ emissionParameters: A.parameters }, h.otherKey);
    expect(forbidden.response.status).to.equal(403);
    expect((await getCollection({ client: h.server.client, auth: h.key, path: { id: 'er-b' } })).data!.emissionParameters).to.deep.equal(B.parameters);
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ['fNRB missing (it has no default)', { stovesInProject: 10, fuelType: 'fuelwood', usageRate: 1 }, '/body/emissionParameters/fNRB'],
    ['fNRB above 1', { ...A.parameters, fNRB: 1.2 }, '/body/emissionParameters/fNRB'],
    ['fNRB below 0', { ...A.parameters, fNRB: -0.1 }, '/body/emissionParameters/fNRB'],
    ['usage rate missing', { stovesInProject: 10, fuelType: 'fuelwood', fNRB: 0.3 }, '/body/emissionParameters/usageRate'],
    ['usage rate above 1', { ...A.parameters, usageRate: 1.5 }, '/body/emissionParameters/usageRate'],
    ['no stoves', { ...A.parameters, stovesInProject: 0 }, '/body/emissionParameters/stovesInProject'],
    ['a fraction of a stove', { ...A.parameters, stovesInProject: 10.5 }, '/body/emissionParameters/stovesInProject'],
    ['an unknown fuel', { ...A.parameters, fuelType: 'dung' }, '/body/emissionParameters/fuelType'],
    ['a year of 400 days', { ...A.parameters, daysPerYear: 400 }, '/body/emissionParameters/daysPerYear'],
    ['an NCV of 0', { ...A.parameters, ncvTJPerGg: 0 }, '/body/emissionParameters/ncvTJPerGg'],
    ['a negative emission factor', { ...A.parameters, efCo2KgPerTJ: -1 }, '/body/emissionParameters/efCo2KgPerTJ'],
    ['an unknown parameter', { ...A.parameters, gwp: 'AR6' }, '/body/emissionParameters/gwp'],
  ];
  for (const [what, parameters, pointer] of invalid) {
    it(`400 for ${what}, on create and on PATCH, nothing stored`, async () => {
      const id = `er-bad-${invalid.findIndex(([w]) => w === what)}`;
      const created = await createCollection({ client: h.server.client, auth: h.key, body: { id, name: 'bad', emissionParameters: parameters as unknown as EmissionParameters } });
      expect(created.response.status).to.equal(400);
      expectContractResponse('post', '/v1/collections', { status: 400, headers: created.response.headers, body: created.error });
      expect((created.error as Problem).errors!.map((e) => e.pointer)).to.include(pointer);
      expect((await getCollection({ client: h.server.client, auth: h.key, path: { id } })).response.status).to.equal(404);

      expect((await createCollection({ client: h.server.client, auth: h.key, body: { id, name: 'good', emissionParameters: A.parameters } })).response.status).to.equal(201);
      const patched = await updateCollection({ client: h.server.client, auth: h.key, path: { id }, body: { emissionParameters: parameters as unknown as EmissionParameters } });
      expect(patched.response.status).to.equal(400);
      expectContractResponse('patch', '/v1/collections/{id}', { status: 400, headers: patched.response.headers, body: patched.error });
      expect((await getCollection({ client: h.server.client, auth: h.key, path: { id } })).data!.emissionParameters).to.deep.equal(A.parameters);
    });
  }
});
