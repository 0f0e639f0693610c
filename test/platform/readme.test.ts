// The front door and the manual: README.md stays short enough to read in a few minutes, every
// relative link of README.md and docs/*.md names a file that exists, and docs/configuration.md
// is what scripts/generate-config-doc.ts writes from the schema today.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { expect } from 'chai';
import { renderConfigurationDoc } from '../../scripts/generate-config-doc.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const README_MAX_BYTES = 12 * 1024;
const pages = () => ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Relative link targets of a Markdown page, without their #fragment; links inside code are not links. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#'))
    .map((target) => target.split('#')[0]!);
}

describe('README and docs/', () => {
  it(`README.md is at most ${README_MAX_BYTES} bytes`, () => {
    expect(statSync(join(ROOT, 'README.md')).size).to.be.at.most(README_MAX_BYTES);
  });

  it('every relative link in README.md and docs/*.md points to an existing file', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const target of relativeLinks(readFileSync(join(ROOT, page), 'utf8'))) {
        if (!existsSync(resolve(ROOT, dirname(page), target))) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).to.deep.equal([]);
    expect(relativeLinks(readFileSync(join(ROOT, 'README.md'), 'utf8'))).to.include.members(['docs/configuration.md', 'docs/operations.md', 'docs/architecture.md']);
  });

  it('docs/configuration.md is a fresh generation from src/config.ts (make generate)', () => {
    expect(readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8')).to.equal(renderConfigurationDoc());
  });
});
