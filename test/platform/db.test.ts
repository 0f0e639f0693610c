// The database a configuration names, SQLite's commit settings, and a database out of reach on
// the command line. (Migrations: migrations.test.ts; the transaction helper: sql.test.ts.)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ConfigError, configWith } from '../../src/config.ts';
import { createDb, createDbFromConfig } from '../../src/platform/db/index.ts';
import { TEST_DATABASE_URL } from '../helpers/databases.ts';

describe('the database the configuration names', () => {
  it('a DATA_DIR (or sqlite: path) that cannot hold the SQLite file is invalid configuration naming the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-not-a-dir-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    try {
      expect(() => createDbFromConfig(configWith({ DATA_DIR: join(file, 'data') }))).to.throw(ConfigError, `Invalid configuration:\n  DATA_DIR: cannot hold the SQLite database: ENOTDIR at ${join(file, 'data')}`);
      expect(() => createDbFromConfig(configWith({ DATABASE_URL: `sqlite:${join(file, 'x', 'h.sqlite')}` }))).to.throw(ConfigError, /^Invalid configuration:\n {2}DATABASE_URL: cannot hold the SQLite database: ENOTDIR/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite commits', () => {
  it('run at synchronous NORMAL from the first statement, on a new database as on one opened again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-sync-'));
    const level = async () => {
      const db = createDb({ dataDir: dir, poolMax: 1 });
      try {
        return (await db.raw<{ synchronous: number }[]>('pragma synchronous'))[0]?.synchronous;
      } finally {
        await db.destroy();
      }
    };
    try {
      // Left to the driver, a new file reads FULL (2) until its first transaction.
      expect(await level()).to.equal(1);
      expect(await level()).to.equal(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a database that cannot be reached, on the command line', () => {
  const migrate = (url: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'migrate'], { env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8', timeout: 30_000 });

  it('is one line naming the problem, and exit status 1', () => {
    const run = migrate('postgres://postgres@127.0.0.1:1/hearth');
    expect(run.status).to.equal(1);
    expect(run.stderr.trim().split('\n')).to.have.length(1);
    expect(run.stderr).to.match(/^Cannot reach the database \(ECONNREFUSED\).*Check DATABASE_URL/);
  });

  if (TEST_DATABASE_URL) {
    it('a database that does not exist says so', () => {
      const url = new URL(TEST_DATABASE_URL!);
      url.pathname = '/hearth_no_such_database';
      const run = migrate(url.toString());
      expect(run.status).to.equal(1);
      expect(run.stderr.trim().split('\n')).to.have.length(1);
      expect(run.stderr).to.match(/^The database does not exist: .*hearth_no_such_database.*createdb/);
    });
  }
});
