// A real headless Chromium for tests that must see what a browser renders. It is the Debian
// package's binary (CI installs it; .ci/run); on a developer machine without it the suite is
// skipped with the reason printed, but never in CI, where a missing browser fails the run.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-component-update', '--disable-sync'];

/** Call inside a describe: launches Chromium before its tests and closes it after. */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  before(async function () {
    if (!existsSync(CHROMIUM_PATH)) {
      if (process.env.CI) throw new Error(`${CHROMIUM_PATH} is missing; CI installs the Debian package chromium (.ci/run).`);
      console.warn(`      skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium to run these tests)`);
      this.skip();
    }
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS });
  });
  after(async () => {
    await browser?.close();
  });
  return () => browser!;
}
