// The pure KPT rule helpers: day counting across month ends and leap days, float sums, overlaps,
// and whether a claim can be verified at all (the sealer signs a credential only then).
import { expect } from 'chai';
import { canBeVerified, evaluateKptRules, inclusiveDays, measurementConflicts, periodsOverlap, preciseSum } from '../../src/twins/claims/kpt-rules.ts';
import { kptClaim } from './fixtures.ts';

describe('KPT rule helpers', () => {
  it('counts inclusive days across month ends and leap days (in UTC)', () => {
    expect(inclusiveDays('2026-03-02', '2026-03-04')).to.equal(3);
    expect(inclusiveDays('2028-02-28', '2028-03-01')).to.equal(3);
    expect(inclusiveDays('2027-02-28', '2027-03-01')).to.equal(2);
    expect(inclusiveDays('2026-12-31', '2027-01-02')).to.equal(3);
    expect(inclusiveDays('2026-03-28', '2026-03-30')).to.equal(3);
  });

  it('sums floats without drift beyond the tolerance', () => {
    expect(preciseSum([0.1, 0.2])).to.equal(0.30000000000000004);
    expect(Math.abs(preciseSum(Array(10).fill(0.1)) - 1)).to.be.lessThan(1e-15);
    const claim = kptClaim({ fuelMeasurements: { total: 1, dailyLogs: Array(10).fill(0.1) }, testPeriod: undefined });
    expect(measurementConflicts(claim, 0.01)).to.deep.equal([]);
    expect(measurementConflicts(claim, 0)).to.deep.equal([]);
  });

  it('a sum that overflows is a conflict, never a pass (NaN compares false)', () => {
    const claim = kptClaim({ fuelMeasurements: { total: 5, dailyLogs: [1e308, 1e308, 1e308] } });
    expect(measurementConflicts(claim, 0.01).map((e) => e.rule)).to.include('total-matches-logs');
  });

  it('treats touching periods as overlapping and disjoint ones as not', () => {
    expect(periodsOverlap({ start: '2026-03-01', end: '2026-03-03' }, { start: '2026-03-03', end: '2026-03-05' })).to.equal(true);
    expect(periodsOverlap({ start: '2026-03-01', end: '2026-03-03' }, { start: '2026-03-04', end: '2026-03-06' })).to.equal(false);
    expect(periodsOverlap({ start: '2026-03-01', end: '2026-03-09' }, { start: '2026-03-04', end: '2026-03-05' })).to.equal(true);
  });

  it('a leap-day period of three days matches three logs', () => {
    const claim = kptClaim({ testPeriod: { startDate: '2028-02-28', endDate: '2028-03-01', durationDays: 3 } });
    expect(measurementConflicts(claim, 0.01)).to.deep.equal([]);
  });

  it('canBeVerified is false exactly for claims that no collection could verify', () => {
    const claims = {
      complete: kptClaim(),
      'no season': kptClaim({ externalFactors: { culturalEvents: ['none'], occupationalFactors: ['farming'] } }),
      'no selection evidence': kptClaim({ evidence: [] }),
      'no test period': kptClaim({ testPeriod: undefined }),
      'no occupational factors': kptClaim({ externalFactors: { season: 'dry', culturalEvents: ['none'], occupationalFactors: [] } }),
    };
    expect(Object.fromEntries(Object.entries(claims).map(([name, claim]) => [name, canBeVerified(claim)]))).to.deep.equal({
      complete: true,
      'no season': false,
      'no selection evidence': true,
      'no test period': false,
      'no occupational factors': false,
    });
    // Every context the database can give: verified somewhere implies canBeVerified.
    for (const claim of Object.values(claims)) {
      for (const passed of [false, true]) {
        for (const [otherGroupPresent, otherGroupAligned] of [[false, false], [true, false], [true, true]] as const) {
          const { status } = evaluateKptRules(claim, { selection: { passed, message: '' }, otherGroupPresent, otherGroupAligned });
          if (status === 'verified') expect(canBeVerified(claim)).to.equal(true);
        }
      }
    }
  });
});
