// Collections and the KPT campaign report (JSON + SVG). Expected statistics were computed
// independently with SciPy (scipy.stats.ttest_ind(equal_var=False), stats.t.ppf).
import { expect } from 'chai';
import {
  changeCredentialStatus, createCollection, getCollection, getCollectionReport, getCollectionReportChart, listCollections, submitClaim,
} from '../../generated/openapi/sdk.gen.ts';
import type { Problem } from '../../generated/openapi/types.gen.ts';
import { buildKptReport } from '../../src/twins/report/report.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey } from '../helpers/server.ts';
import { CAMPAIGN_ID, CENSUS_DESIGN, createFramedCollection, kptClaim, PARTNER_DID, startTwinsHarness, type TwinsHarness } from './fixtures.ts';

const REFERENCE = [2.5, 2.8, 3.0, 2.7, 2.9];
const INTERVENTION = [1.5, 1.7, 1.4, 1.8];
const SCIPY = {
  t: 9.407443861113395,
  p: 4.12973948096743e-5,
  df: 6.719604274956517,
  savings: 1.18,
  ci: [0.9408576979794021, 1.4191423020205987],
  precision: 0.2026629678140663,
  refMean: 2.78, refSd: 0.1923538406167134, intMean: 1.6, intSd: 0.1825741858350554,
  refN: 2, intN: 4,
};

forEachDatabase('collections and the KPT campaign report', (t) => {
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  it('creates a collection (201, Location), refuses a duplicate id (409), gets and lists it', async () => {
    const res = await createCollection({ client: h.server.client, auth: h.key, body: { id: 'kisumu-2026', name: 'Kisumu 2026', selectionMethod: 'Random draw of 60 from the register' } });
    expect(res.response.status).to.equal(201);
    expectContractResponse('post', '/v1/collections', { status: 201, headers: res.response.headers, body: res.data });
    expect(res.response.headers.get('location')).to.equal('/v1/collections/kisumu-2026');
    expect(res.data).to.deep.include({ id: 'kisumu-2026', createdBy: PARTNER_DID });
    const dup = await createCollection({ client: h.server.client, auth: h.key, body: { id: 'kisumu-2026', name: 'again' } });
    expect(dup.response.status).to.equal(409);
    expectContractResponse('post', '/v1/collections', { status: 409, headers: dup.response.headers, body: dup.error });
    expect((dup.error as Problem).errors![0]).to.include({ pointer: '/body/id' });
    const got = await getCollection({ client: h.server.client, auth: h.key, path: { id: 'kisumu-2026' } });
    expect(got.data).to.deep.equal(res.data);
    const page = await listCollections({ client: h.server.client, auth: h.key, query: { limit: 1 } });
    expectContractResponse('get', '/v1/collections', { status: 200, headers: page.response.headers, body: page.data });
    expect(page.data!.items.map((c) => c.id)).to.deep.equal(['default']);
    // After `default`: `ussd` (seeded for USSD claims by migration 203), the harness's campaign, then the new one.
    const next = await listCollections({ client: h.server.client, auth: h.key, query: { limit: 3, cursor: page.data!.nextCursor } });
    expect(next.data!.items.map((c) => c.id)).to.deep.equal(['ussd', CAMPAIGN_ID, 'kisumu-2026']);
    const missing = await getCollection({ client: h.server.client, auth: h.key, path: { id: 'nope' } });
    expect(missing.response.status).to.equal(404);
    const forbidden = await createCollection({ client: h.server.client, auth: h.readOnlyKey, body: { id: 'x', name: 'x' } });
    expect(forbidden.response.status).to.equal(403);
  });

  it('reports households, days, mean, SD, savings, Welch t-test, 90% CI, precision and 90/10 sample size', async () => {
    await createFramedCollection(h.server, h.key, { id: 'report', name: 'Report' });
    const submit = (group: 'reference' | 'intervention', kgPerDay: number) =>
      submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: 'report', testGroup: group, fuelMeasurements: { total: kgPerDay * 3, dailyLogs: [kgPerDay, kgPerDay, kgPerDay] } }) });
    for (const m of REFERENCE) await submit('reference', m);
    for (const m of INTERVENTION) await submit('intervention', m);
    // Rejected claims are not counted.
    await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: 'report', testGroup: 'intervention', externalFactors: { season: 'dry' } }) });

    const res = await getCollectionReport({ client: h.server.client, auth: h.key, path: { id: 'report' } });
    expectContractResponse('get', '/v1/collections/{id}/report', { status: 200, headers: res.response.headers, body: res.data });
    const r = res.data!;
    expect(r.selection).to.deep.include({ design: { ...CENSUS_DESIGN, frameSource: 'draws' }, claimsHeldApart: 0 });
    expect(r.selection.draws).to.have.length(1);
    expect(r.claimsCounted).to.equal(9);
    expect(r.reference).to.include({ households: 5, householdDays: 15 });
    expect(r.intervention).to.include({ households: 4, householdDays: 12 });
    expect(r.reference.meanKgPerHouseholdDay).to.be.closeTo(SCIPY.refMean, 1e-6);
    expect(r.reference.sdKgPerHouseholdDay).to.be.closeTo(SCIPY.refSd, 1e-6);
    expect(r.intervention.meanKgPerHouseholdDay).to.be.closeTo(SCIPY.intMean, 1e-6);
    expect(r.intervention.sdKgPerHouseholdDay).to.be.closeTo(SCIPY.intSd, 1e-6);
    expect(r.savings.kgPerHouseholdDay).to.be.closeTo(SCIPY.savings, 1e-6);
    expect(r.savings.percent).to.be.closeTo((SCIPY.savings / SCIPY.refMean) * 100, 1e-3);
    expect(r.savings.confidenceInterval90![0]).to.be.closeTo(SCIPY.ci[0]!, 1e-5);
    expect(r.savings.confidenceInterval90![1]).to.be.closeTo(SCIPY.ci[1]!, 1e-5);
    expect(r.welch.t).to.be.closeTo(SCIPY.t, 1e-5);
    expect(r.welch.degreesOfFreedom).to.be.closeTo(SCIPY.df, 1e-3);
    expect(r.welch.pValue).to.be.closeTo(SCIPY.p, 1e-7);
    expect(r.precision.relative).to.be.closeTo(SCIPY.precision, 1e-5);
    expect(r.precision.meets90_10).to.equal(false);
    expect(r.sampleSize).to.deep.equal({ target: '90/10', referenceHouseholdsNeeded: SCIPY.refN, interventionHouseholdsNeeded: SCIPY.intN });

    const svg = await getCollectionReportChart({ client: h.server.client, auth: h.key, path: { id: 'report' }, parseAs: 'text' });
    expect(svg.response.status).to.equal(200);
    expect(svg.response.headers.get('content-type')).to.match(/^image\/svg\+xml/);
    const text = svg.data as unknown as string;
    expect(text).to.match(/^<\?xml version="1.0"/);
    expect(text).to.match(/<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>\n$/);
    expect(text.match(/<circle /g)).to.have.length(9);
    expect(text).to.include('Reference: 5 households').and.include('Intervention: 4 households');
  });

  it('leaves out claims whose credential is revoked or suspended (claimsWithdrawn), and counts a reinstated one again', async () => {
    await createFramedCollection(h.server, h.key, { id: 'withdrawn', name: 'Withdrawn' });
    const submit = async (group: 'reference' | 'intervention', kgPerDay: number) =>
      (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: 'withdrawn', testGroup: group, fuelMeasurements: { total: kgPerDay * 3, dailyLogs: [kgPerDay, kgPerDay, kgPerDay] } }) })).data!;
    const refs = [await submit('reference', 3), await submit('reference', 2)];
    const ints = [await submit('intervention', 1), await submit('intervention', 1.5)];
    const revoker = await createTestKey(t.db, { principalDid: 'did:ixo:entity:0000000000000000000000000000dddd', scopes: ['credentials:revoke'] });
    const change = (id: string, action: 'revoke' | 'suspend' | 'reinstate') =>
      changeCredentialStatus({ client: h.server.client, auth: revoker, path: { id }, body: { action, reason: 'scale found faulty' } }).then((r) => r.response.status);
    const report = async () => {
      const res = await getCollectionReport({ client: h.server.client, auth: h.key, path: { id: 'withdrawn' } });
      expectContractResponse('get', '/v1/collections/{id}/report', { status: 200, headers: res.response.headers, body: res.data });
      return res.data!;
    };
    expect(await report()).to.deep.include({ claimsCounted: 4, claimsWithdrawn: 0 });
    expect(await change(ints[1]!.id, 'revoke')).to.equal(200);
    expect(await change(refs[1]!.id, 'suspend')).to.equal(200);
    const r = await report();
    expect(r).to.deep.include({ claimsCounted: 2, claimsWithdrawn: 2 });
    expect([r.reference.values, r.intervention.values]).to.deep.equal([[3], [1]]);
    const svg = await getCollectionReportChart({ client: h.server.client, auth: h.key, path: { id: 'withdrawn' }, parseAs: 'text' });
    expect(svg.data).to.include('2 verified claims (2 withdrawn, not counted)');
    expect(await change(refs[1]!.id, 'reinstate')).to.equal(200);
    expect(await report()).to.deep.include({ claimsCounted: 3, claimsWithdrawn: 1 });
  });

  it('404 for the report of an unknown collection', async () => {
    const res = await getCollectionReport({ client: h.server.client, auth: h.key, path: { id: 'nope' } });
    expect(res.response.status).to.equal(404);
    const svg = await getCollectionReportChart({ client: h.server.client, auth: h.key, path: { id: 'nope' } });
    expect(svg.response.status).to.equal(404);
  });
});

describe('KPT report with too little data', () => {
  it('gives nulls instead of numbers it cannot compute, and pools several claims of one household', () => {
    const empty = buildKptReport('c', []);
    expect(empty.reference).to.deep.equal({ households: 0, householdDays: 0, meanKgPerHouseholdDay: null, sdKgPerHouseholdDay: null, values: [] });
    expect(empty.savings).to.deep.equal({ kgPerHouseholdDay: null, percent: null, confidenceInterval90: null });
    expect(empty.welch).to.deep.equal({ t: null, degreesOfFreedom: null, pValue: null });
    const pooled = buildKptReport('c', [
      { household: 'did:x:1', group: 'reference', days: 3, totalKg: 9 },
      { household: 'did:x:1', group: 'reference', days: 1, totalKg: 1 },
      { household: 'did:x:2', group: 'intervention', days: 3, totalKg: 3 },
    ]);
    expect(pooled.reference).to.include({ households: 1, householdDays: 4, meanKgPerHouseholdDay: 2.5, sdKgPerHouseholdDay: null });
    expect(pooled.savings.kgPerHouseholdDay).to.equal(1.5);
    expect(pooled.savings.percent).to.equal(60);
    expect(pooled.welch.t).to.equal(null);
  });
});
