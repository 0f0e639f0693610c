// Draws of a campaign's households (KPT rule 5): committed then revealed, every input published,
// recomputed by an independent implementation (test/twins/draws/recompute-draw.ts), a
// tampered frame or seed detected, redraws, and every refusal; on SQLite and PostgreSQL.
import { expect } from 'chai';
import { createCollection, createDraw, getCollectionReport, getDraw, revealDraw, submitClaim } from '../../generated/openapi/sdk.gen.ts';
import type { Draw, DrawCreateRequest, KptClaim, Problem, SelectionDesign } from '../../generated/openapi/types.gen.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { recomputeDraw, type PublishedDraw } from './draws/recompute-draw.ts';
import { kptClaim, startTwinsHarness, unframedHouseholdDid, type TwinsHarness } from './fixtures.ts';

/** The independent recomputation: the problems it finds in the published inputs, and the households drawn by stratum. */
const recompute = (draw: unknown) => recomputeDraw(draw as PublishedDraw);

const STRATIFIED: SelectionDesign = { type: 'stratified-random', frame: 'Programme register', procedure: 'Hearth draws 3 rural and 2 urban households', strata: ['rural', 'urban'] };

forEachDatabase('draws', (t) => {
  let h: TwinsHarness;
  before(async () => {
    h = await startTwinsHarness(t.db);
  });
  after(() => h.server.stop());

  const campaign = async (id: string, selectionDesign: SelectionDesign) => {
    const res = await createCollection({ client: h.server.client, auth: h.key, body: { id, name: id, selectionDesign } });
    expect(res.response.status).to.equal(201);
  };
  const draw = async (id: string, body: DrawCreateRequest, key = h.key) => {
    const res = await createDraw({ client: h.server.client, auth: key, path: { id }, body });
    expectContractResponse('post', '/v1/collections/{id}/draws', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
    return res;
  };
  const reveal = async (id: string, drawId: string, key = h.key) => {
    const res = await revealDraw({ client: h.server.client, auth: key, path: { id, drawId } });
    expectContractResponse('post', '/v1/collections/{id}/draws/{drawId}/reveal', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
    return res;
  };
  const get = async (id: string, drawId: string) => {
    const res = await getDraw({ client: h.server.client, auth: h.key, path: { id, drawId } });
    expectContractResponse('get', '/v1/collections/{id}/draws/{drawId}', { status: res.response.status, headers: res.response.headers, body: res.data ?? res.error });
    return res;
  };
  const claimPair = async (collectionId: string, reference: string, intervention: string): Promise<KptClaim[]> => [
    (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId, householdId: reference }) })).data!,
    (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId, householdId: intervention, testGroup: 'intervention' }) })).data!,
  ];
  const stratifiedFrame = () => [
    ...Array.from({ length: 8 }, () => ({ household: unframedHouseholdDid(), stratum: 'rural' })),
    ...Array.from({ length: 6 }, () => ({ household: unframedHouseholdDid(), stratum: 'urban' })),
  ];

  it('commits (seed commitment and frame published, no seed), then reveals: an independent implementation recomputes the draw exactly', async () => {
    await campaign('stratified', STRATIFIED);
    const frame = stratifiedFrame();
    const created = await draw('stratified', { frame, sampleSizes: { rural: 3, urban: 2 } });
    expect(created.response.status).to.equal(201);
    const committed = created.data!;
    expect(created.response.headers.get('location')).to.equal(`/v1/collections/stratified/draws/${committed.id}`);
    expect(committed).to.include({ design: 'stratified-random', algorithm: 'hearth-draw-sha256-rank/1', status: 'committed', frameSize: 14 });
    expect(committed).not.to.have.property('seed');
    expect(committed.seedCommitment).to.match(/^[0-9a-f]{64}$/);
    expect(committed.frame).to.deep.equal([...frame].sort((a, b) => (a.household < b.household ? -1 : 1)));
    expect(committed.samples).to.deep.equal([
      { stratum: 'rural', frameSize: 8, sampleSize: 3, drawn: [] },
      { stratum: 'urban', frameSize: 6, sampleSize: 2, drawn: [] },
    ]);
    expect((await get('stratified', committed.id)).data).to.deep.equal(committed);
    // Before the reveal no household is drawn: rule 5 fails for all.
    const early = await claimPair('stratified', frame[0]!.household, frame[9]!.household);
    expect(early.map((c) => c.status)).to.deep.equal(['rejected', 'rejected']);

    const revealed = (await reveal('stratified', committed.id)).data!;
    expect(revealed).to.deep.include({ ...committed, status: 'drawn', samples: revealed.samples });
    expect(revealed.revealedAt).to.be.a('string');
    const independent = recompute(revealed);
    expect(independent.problems).to.deep.equal([]);
    expect(revealed.samples.map((s) => s.drawn)).to.deep.equal([independent.drawn.rural, independent.drawn.urban]);
    expect(revealed.samples.map((s) => s.drawn.length)).to.deep.equal([3, 2]);
    // Revealing again changes nothing: a draw never changes.
    expect((await reveal('stratified', committed.id)).data).to.deep.equal(revealed);
    expect((await get('stratified', committed.id)).data).to.deep.equal(revealed);

    // A drawn pair verifies, its credential naming the draw; an undrawn frame member does not pass rule 5.
    const [rural, urban] = revealed.samples;
    // Households the early claims did not name (an identical claim again answers the rejected one).
    const fresh = (drawn: string[]) => drawn.find((d) => d !== frame[0]!.household && d !== frame[9]!.household)!;
    const [ref, int] = await claimPair('stratified', fresh(rural!.drawn), fresh(urban!.drawn));
    expect([ref!.status, int!.status]).to.deep.equal(['pending', 'verified']);
    const subject = int!.verifiableCredential!.credentialSubject;
    expect(subject).to.include({ selectionDesign: 'stratified-random', selectionFrame: 'Programme register' });
    expect(subject.selectionDraw).to.equal(`http://localhost:3000/v1/collections/stratified/draws/${committed.id}`);
    const undrawn = frame.find((m, i) => !rural!.drawn.includes(m.household) && m.stratum === 'rural' && i !== 0)!.household;
    const outside = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: 'stratified', householdId: undrawn }) })).data!;
    expect(outside.status).to.equal('rejected');
    expect(outside.reasons.map((r) => r.rule)).to.deep.equal(['random-selection-verified']);
    const report = (await getCollectionReport({ client: h.server.client, auth: h.key, path: { id: 'stratified' } })).data!;
    expect(report.selection).to.deep.equal({ design: { ...STRATIFIED, frameSource: 'draws' }, draws: [committed.id], claimsHeldApart: 3 });
  });

  it('a tampered frame or seed is detected by the independent recomputation', async () => {
    await campaign('tamper', { type: 'simple-random', frame: 'Register', procedure: 'Hearth draws 4' });
    const frame = Array.from({ length: 10 }, () => ({ household: unframedHouseholdDid() }));
    const committed = (await draw('tamper', { frame, sampleSize: 4 })).data!;
    const revealed = (await reveal('tamper', committed.id)).data!;
    const independent = recompute(revealed);
    expect(independent.problems).to.deep.equal([]);
    expect(independent.drawn['']).to.deep.equal(revealed.samples[0]!.drawn);
    const swapped: Draw = { ...revealed, frame: revealed.frame.map((m, i) => (i === 0 ? { household: unframedHouseholdDid() } : m)) };
    expect(recompute(swapped).problems).to.deep.equal(['frame digest']);
    const reseeded: Draw = { ...revealed, seed: `${revealed.seed!.slice(0, 63)}${revealed.seed!.endsWith('0') ? '1' : '0'}` };
    expect(recompute(reseeded).problems).to.deep.equal(['seed commitment']);
  });

  it('a redraw names the draw it replaces: the replaced draw counts until the redraw is drawn, and is replaced once', async () => {
    await campaign('redraw', { type: 'simple-random', frame: 'Register', procedure: 'Hearth draws 3' });
    // Twenty households: the redraw leaves out one of the first draw's but once in 1140 draws.
    const frame = Array.from({ length: 20 }, () => ({ household: unframedHouseholdDid() }));
    const first = (await reveal('redraw', (await draw('redraw', { frame, sampleSize: 3 })).data!.id)).data!;
    const second = (await draw('redraw', { frame, sampleSize: 3, replaces: first.id })).data!;
    expect(second).to.include({ replaces: first.id, status: 'committed' });
    expect((await get('redraw', first.id)).data).to.deep.equal({ ...first, replacedBy: second.id });
    const report = async () => (await getCollectionReport({ client: h.server.client, auth: h.key, path: { id: 'redraw' } })).data!.selection.draws;
    expect(await report()).to.deep.equal([first.id]);
    await reveal('redraw', second.id);
    expect(await report()).to.deep.equal([second.id]);
    const redrawn = (await get('redraw', second.id)).data!.samples[0]!.drawn;
    const onlyFirst = first.samples[0]!.drawn.find((d) => !redrawn.includes(d));
    if (onlyFirst) {
      const claim = (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim({ collectionId: 'redraw', householdId: onlyFirst }) })).data!;
      expect(claim.reasons.map((r) => r.rule)).to.deep.equal(['random-selection-verified']);
    }
    const again = await draw('redraw', { frame, sampleSize: 3, replaces: first.id });
    expect(again.response.status).to.equal(409);
    expect((again.error as Problem).errors).to.deep.equal([{ pointer: '/body/replaces', message: 'is already replaced', rule: 'replaced-once' }]);
  });

  it('a census of a full-population campaign is drawn at once, every frame member drawn, no seed', async () => {
    await campaign('census', { type: 'full-population', frame: 'All households of the village', procedure: 'Every household' });
    const frame = Array.from({ length: 4 }, () => ({ household: unframedHouseholdDid() }));
    const census = (await draw('census', { frame })).data!;
    expect(census).to.include({ algorithm: 'hearth-census/1', status: 'drawn', frameSize: 4 });
    expect(census).not.to.have.property('seed');
    expect(census).not.to.have.property('seedCommitment');
    expect(recompute(census)).to.deep.equal({ problems: [], drawn: { '': census.samples[0]!.drawn } });
    expect(census.samples[0]!.drawn).to.have.length(4);
  });

  it('refuses what does not fit: 400 frame and sample sizes, 403 not the creator, 404 unknown, 409 a design that draws nothing', async () => {
    await campaign('refusals', STRATIFIED);
    const frame = stratifiedFrame();
    const refused = async (body: DrawCreateRequest, rules: string[], status = 400, id = 'refusals') => {
      const res = await draw(id, body);
      expect(res.response.status, JSON.stringify(res.error)).to.equal(status);
      expect(((res.error as Problem).errors ?? []).map((e) => e.rule)).to.deep.equal(rules);
    };
    await refused({ frame: [...frame, frame[0]!], sampleSizes: { rural: 1, urban: 1 } }, ['frame-unique']);
    await refused({ frame: [...frame, { household: unframedHouseholdDid(), stratum: 'coastal' }], sampleSizes: { rural: 1, urban: 1 } }, ['frame-stratum']);
    await refused({ frame: [...frame, { household: unframedHouseholdDid() }], sampleSizes: { rural: 1, urban: 1 } }, ['frame-stratum']);
    await refused({ frame, sampleSizes: { rural: 1 } }, ['sample-size']);
    await refused({ frame, sampleSizes: { rural: 9, urban: 1 } }, ['sample-size']);
    await refused({ frame, sampleSizes: { rural: 1, urban: 1, coastal: 1 } }, ['sample-size']);
    await refused({ frame, sampleSize: 2, sampleSizes: { rural: 1, urban: 1 } }, ['sample-size']);
    await refused({ frame, sampleSizes: { rural: 1, urban: 1 }, replaces: 'drw_00000000000000000000000000000000' }, ['replaces-draw']);
    await campaign('refusals-simple', { type: 'simple-random', frame: 'Register', procedure: 'Hearth draws' });
    await refused({ frame: frame.slice(0, 3).map(({ household }) => ({ household })), sampleSize: 4 }, ['sample-size'], 400, 'refusals-simple');
    await refused({ frame: frame.slice(0, 3).map(({ household }) => ({ household })) }, ['sample-size'], 400, 'refusals-simple');
    await campaign('refusals-census', { type: 'full-population', frame: 'Village', procedure: 'Every household' });
    await refused({ frame: frame.slice(0, 3).map(({ household }) => ({ household })), sampleSize: 3 }, ['sample-size'], 400, 'refusals-census');

    const ok = { frame, sampleSizes: { rural: 1, urban: 1 } };
    expect((await draw('refusals', ok, h.otherKey)).response.status).to.equal(403);
    expect((await draw('no-such-campaign', ok)).response.status).to.equal(404);
    const committed = (await draw('refusals', ok)).data!;
    expect((await reveal('refusals', committed.id, h.otherKey)).response.status).to.equal(403);
    expect((await get('refusals', committed.id)).data!.status).to.equal('committed');
    expect((await reveal('refusals-simple', committed.id)).response.status).to.equal(404);
    expect((await get('refusals', 'drw_00000000000000000000000000000000')).response.status).to.equal(404);

    await createCollection({ client: h.server.client, auth: h.key, body: { id: 'refusals-undeclared', name: 'Undeclared' } });
    await refused({ frame: frame.slice(0, 1).map(({ household }) => ({ household })) }, [], 409, 'refusals-undeclared');
    await campaign('refusals-registered', { type: 'full-population', frameSource: 'registered-households', frame: 'Registered', procedure: 'Every registered household' });
    await refused({ frame: frame.slice(0, 1).map(({ household }) => ({ household })) }, [], 409, 'refusals-registered');
  });
});
