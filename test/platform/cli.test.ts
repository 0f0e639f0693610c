// The operator's command line (src/main.ts): `keys` and `migrate`, run as a user runs them.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';

describe('tsx src/main.ts keys', function () {
  this.timeout(60_000);
  let dir: string;
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'keys', ...args], {
      env: { ...process.env, DATA_DIR: dir, DATABASE_URL: `sqlite:${join(dir, 'hearth.sqlite')}`, LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 30_000,
    });
  before(() => (dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a key with the scopes named, or the default ones when none are named', () => {
    const some = run('create', '--name', 'reader', '--principal', 'did:ixo:entity:0123456789abcdef0123456789abcdef', '--scopes', 'claims:read');
    expect(some.status, some.stderr).to.equal(0);
    expect(some.stdout).to.match(/^Created key \S+ for did:ixo:entity:0123456789abcdef0123456789abcdef with scopes claims:read\.\n/);
    const defaults = run('create', '--name', 'partner', '--principal', 'did:ixo:entity:0123456789abcdef0123456789abcdef');
    expect(defaults.status, defaults.stderr).to.equal(0);
    expect(defaults.stdout).to.include('claims:write');
  });

  it('an empty --scopes is refused, not taken as every default scope', () => {
    for (const scopes of ['', ' , ']) {
      const res = run('create', '--name', 'empty', '--principal', 'did:ixo:entity:0123456789abcdef0123456789abcdef', '--scopes', scopes);
      expect(res.status).to.equal(1);
      expect(res.stderr).to.match(/^--scopes names no scope; leave it out for the default scopes/);
      expect(res.stdout).to.equal('');
    }
    expect(run('list').stdout).to.not.include('empty');
  });
});

describe('tsx src/main.ts migrate', function () {
  this.timeout(60_000);
  it('a SQLite file it cannot open is one line naming DATA_DIR and DATABASE_URL, not a stack trace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'));
    try {
      // A folder where the file should be: SQLite cannot open it (SQLITE_CANTOPEN).
      const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'migrate'], { env: { ...process.env, DATABASE_URL: `sqlite:${dir}`, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 30_000 });
      expect(res.status).to.equal(1);
      expect(res.stderr).to.equal(
        'Cannot open or write the SQLite database (SQLITE_CANTOPEN): unable to open database file. Check that DATA_DIR (or the file DATABASE_URL names) is a folder and a Hearth database file this user may write, on a disk with room.\n',
      );
      // A file that is no database at all.
      const file = join(dir, 'random.sqlite');
      writeFileSync(file, randomBytes(10_000));
      const notDb = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'migrate'], { env: { ...process.env, DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 30_000 });
      expect(notDb.status).to.equal(1);
      expect(notDb.stderr).to.match(/^Cannot open or write the SQLite database \(SQLITE_NOTADB\): file is not a database\. Check that DATA_DIR/);
      expect(notDb.stderr.trim().split('\n')).to.have.length(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
