// The KPT report chart (GET /v1/collections/{id}/report.svg), rendered by a real headless Chromium
// and measured there: every label inside the picture and none over another, the figures printed.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { buildKptReport, formatPValue, niceTicks, renderReportSvg, type ReportClaim } from '../../src/twins/report/report.ts';
import { useChromium } from '../helpers/chromium.ts';

// 12 households per group, the campaign size the chart was first found unreadable at.
const REFERENCE = [2.5, 2.8, 3.0, 2.7, 2.9, 2.6, 3.1, 2.75, 2.85, 2.95, 2.65, 2.8];
const INTERVENTION = [1.0, 2.2, 1.3, 1.9, 1.6, 2.4, 1.2, 1.8, 1.5, 2.0, 1.1, 1.7];
const claims = (group: ReportClaim['group'], values: number[]): ReportClaim[] =>
  values.map((v, i) => ({ household: `did:ixo:entity:${group}-${i}`, group, days: 3, totalKg: v * 3 }));

describe('KPT report chart', () => {
  describe('number formatting', () => {
    it('prints p below 0.001 as "p < 0.001" and otherwise to three significant digits', () => {
      expect(formatPValue(4.1e-5)).to.equal('p < 0.001');
      expect(formatPValue(0.001)).to.equal('p = 0.00100');
      expect(formatPValue(0.04567)).to.equal('p = 0.0457');
      expect(formatPValue(0.5)).to.equal('p = 0.500');
      expect(formatPValue(null)).to.equal('p = n/a');
    });

    it('puts ticks from 0 at steps of 1, 2 or 5 times a power of ten, covering the largest value', () => {
      expect(niceTicks(3.41)).to.deep.equal([0, 1, 2, 3, 4]);
      expect(niceTicks(4.2)).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(niceTicks(0.83)).to.deep.equal([0, 0.2, 0.4, 0.6, 0.8, 1]);
      expect(niceTicks(12)).to.deep.equal([0, 5, 10, 15]);
      expect(niceTicks(0.3)).to.deep.equal([0, 0.1, 0.2, 0.3]);
      expect(niceTicks(0)).to.deep.equal([0, 0.2, 0.4, 0.6, 0.8, 1]);
    });
  });

  describe('rendered in headless Chromium', () => {
    const browser = useChromium();

    /** Opens the SVG as the standalone document a browser gets from report.svg. */
    async function open(svg: string) {
      const page = await browser().newPage();
      await page.goto(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`);
      // No local function declarations inside: tsx would wrap them in a helper the page lacks.
      const layout = await page.evaluate(() => {
        const root = document.documentElement;
        return {
          // A browser shows an XML error page, not the chart, for a document that is not well formed.
          root: root.localName,
          width: Number(root.getAttribute('width')),
          height: Number(root.getAttribute('height')),
          texts: Array.from(document.querySelectorAll('text'), (t) => {
            const r = t.getBoundingClientRect();
            return { text: t.textContent ?? '', left: r.left, top: r.top, right: r.right, bottom: r.bottom };
          }),
          circles: Array.from(document.querySelectorAll('circle'), (c) => {
            const r = c.getBoundingClientRect();
            return { left: r.left, right: r.right };
          }),
        };
      });
      expect(layout.root).to.equal('svg');
      return { page, layout };
    }

    it('keeps every label inside the picture and clear of the others, with the figures printed', async () => {
      const report = buildKptReport('kisumu-2026-q1', [...claims('reference', REFERENCE), ...claims('intervention', INTERVENTION)], {
        emissionParameters: { stovesInProject: 12000, fuelType: 'fuelwood', fNRB: 0.85, usageRate: 0.95, daysPerYear: 365, efNonCo2KgCo2ePerTJ: 9460 },
      });
      const svg = renderReportSvg(report);
      const { page, layout } = await open(svg);
      const dir = mkdtempSync(join(tmpdir(), 'hearth-chart-'));
      writeFileSync(join(dir, 'report.png'), await page.screenshot());
      await page.close();

      expect(layout.texts.length).to.be.greaterThan(10);
      for (const t of layout.texts) {
        expect(t.left, `"${t.text}" starts left of the picture`).to.be.at.least(0);
        expect(t.right, `"${t.text}" runs past the right edge`).to.be.at.most(layout.width);
        expect(t.top, `"${t.text}" is cut at the top`).to.be.at.least(0);
        expect(t.bottom, `"${t.text}" is cut at the bottom`).to.be.at.most(layout.height);
      }
      for (const [i, a] of layout.texts.entries()) {
        for (const b of layout.texts.slice(i + 1)) {
          const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
          expect(overlap, `"${a.text}" overlaps "${b.text}"`).to.equal(false);
        }
      }
      expect(layout.circles).to.have.length(24);
      for (const c of layout.circles) expect(c.left >= 0 && c.right <= layout.width).to.equal(true);

      const printed = layout.texts.map((t) => t.text);
      const all = printed.join('\n');
      expect(all).not.to.include('+-');
      expect(printed).to.include.members(['0', '1', '2', '3', '4']);
      expect(all).to.include('Reference: 12 households, 36 household-days; mean 2.800 ± 0.173 SD kg/household/day');
      expect(all).to.include('Intervention: 12 households, 36 household-days; mean 1.642 ± 0.442 SD kg/household/day');
      expect(all).to.include(`${formatPValue(report.welch.pValue)}`).and.include('p < 0.001');
      const ci = report.savings.confidenceInterval90!;
      expect(all).to.include(`Savings (reference − intervention): 1.158 kg/household/day (41.4%), 90% CI ${ci[0].toFixed(3)} to ${ci[1].toFixed(3)}`);
      // Not met for the savings although each group has more households than its own mean needs:
      // the two figures say what each is about, with what is present beside it.
      expect(report.precision.meets90_10).to.equal(false);
      expect(all).to.include(`Savings: 90% CI half-width ${(report.precision.relative! * 100).toFixed(1)}% of the savings; 90/10 target (at most 10%) not met.`);
      expect(all).to.include(
        `Each group's own mean at 90/10: reference ${report.sampleSize.referenceHouseholdsNeeded} households needed (12 present), intervention ${report.sampleSize.interventionHouseholdsNeeded} households needed (12 present).`,
      );
      // The emission reductions and each of their inputs, with their sources, inside the picture too.
      expect(all).to.include('tCO2e a year for 12000 stoves');
      expect(all).to.include("90/10 not met: B at the baseline's one-sided 90% lower bound, P at the project's upper bound");
      expect(all).to.include('N = 12000 stoves, U = 0.95, D = 365 days/year (declared), fNRB = 0.85');
      expect(all).to.include('NCV 15.6 TJ/Gg (IPCC 2006 default), EF_CO2 112000 kg CO2/TJ (IPCC 2006 default)');
      expect(all).to.include('EF_nonCO2 9460 kg CO2e/TJ (declared)');
      console.log(`      screenshot: ${join(dir, 'report.png')}`);
    });

    it('renders a collection with no claims yet without numbers it cannot compute', async () => {
      const { page, layout } = await open(renderReportSvg(buildKptReport('empty', [])));
      await page.close();
      expect(layout.circles).to.have.length(0);
      const all = layout.texts.map((t) => t.text).join('\n');
      expect(all).to.include('Reference: 0 households, 0 household-days; no households');
      expect(all).to.include('p = n/a').and.include('90% CI n/a');
      for (const t of layout.texts) expect(t.right, t.text).to.be.at.most(layout.width);
    });

    it('prints why the emission reductions are not computed inside the picture, the longest reason too', async () => {
      const single = buildKptReport('single', [...claims('reference', [3]), ...claims('intervention', [1, 1.5])], {
        emissionParameters: { stovesInProject: 10, fuelType: 'charcoal', fNRB: 0.5, usageRate: 1 },
      });
      const { page, layout } = await open(renderReportSvg(single));
      await page.close();
      const all = layout.texts.map((t) => t.text).join('\n');
      expect(all).to.include('Emission reductions: not computed\n(the savings miss 90/10 precision and a group has a single household, so it has no conservative bound)');
      for (const t of layout.texts) {
        expect(t.right, t.text).to.be.at.most(layout.width);
        expect(t.bottom, t.text).to.be.at.most(layout.height);
      }
    });
  });
});
