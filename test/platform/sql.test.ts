import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { syncBuiltinESMExports } from 'node:module';
import FakeTimers from '@sinonjs/fake-timers';
import { expect } from 'chai';
import express from 'express';
import request from 'supertest';
import { createDb, type Db } from '../../src/platform/db/index.ts';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { createTestDatabase, forEachDatabase } from '../helpers/databases.ts';
import { watched } from '../helpers/fake-clock.ts';

forEachDatabase('the Knex data layer', (t) => {
  let db: Db;
  before(async () => {
    db = t.db;
    await db.schema.createTable('sql_runner_t', (table) => {
      table.string('id', 64).notNullable().primary();
      table.boolean('flag').notNullable();
      table.integer('n');
    });
  });

  it('reads, writes and counts changed rows, binding booleans', async () => {
    await db('sql_runner_t').insert({ id: 'a', flag: true, n: 1 });
    await db('sql_runner_t').insert({ id: 'b', flag: false, n: 2 });
    const a = await db('sql_runner_t').where('id', 'a').first();
    expect(a?.id).to.equal('a');
    expect(Boolean(a?.flag)).to.equal(true);
    expect(await db('sql_runner_t').where('id', 'none').first()).to.equal(undefined);
    expect((await db('sql_runner_t').select('id').orderBy('id')).map((r: { id: string }) => r.id)).to.deep.equal(['a', 'b']);
    expect(await db('sql_runner_t').update({ n: 5 }).where('flag', false)).to.equal(1);
    expect(await db('sql_runner_t').update({ n: 9 }).where('id', 'none')).to.equal(0);
    expect(await db('sql_runner_t').where('n', '>=', 0).delete()).to.equal(2);
  });

  it('surfaces constraint violations as the driver reports them', async () => {
    await db('sql_runner_t').insert({ id: 'dup', flag: true });
    let error: unknown;
    try {
      await db('sql_runner_t').insert({ id: 'dup', flag: true });
    } catch (err) {
      error = err;
    }
    expect((error as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
    // Errors carry no bound values (they can be phone numbers or PINs' hashes, and errors are logged).
    expect((error as Error).message).not.to.include("'dup'");
    await db('sql_runner_t').delete();
  });

  it('a statement outside a transaction never sees it uncommitted', async () => {
    let outside: Promise<{ n: number | string } | undefined> | undefined;
    await inTransaction(db, async (trx) => {
      await trx('sql_runner_t').insert({ id: 'tx', flag: true });
      expect(await trx('sql_runner_t').select('id').where('id', 'tx').first()).to.deep.equal({ id: 'tx' });
      // On SQLite this waits for the only connection until the transaction is over.
      outside = db('sql_runner_t').count({ n: '*' }).first() as Promise<{ n: number | string } | undefined>;
      throw new Error('roll back');
    }).catch((err: Error) => expect(err.message).to.equal('roll back'));
    expect(Number((await outside)!.n)).to.equal(0);
    expect(await db('sql_runner_t').select('id').where('id', 'tx').first()).to.equal(undefined);
  });

  it('inTransaction commits what fn wrote when it resolves', async () => {
    const result = await inTransaction(db, async (trx) => {
      await trx('sql_runner_t').insert([{ id: 'c1', flag: true }, { id: 'c2', flag: false }]);
      return (await trx('sql_runner_t').select('id').where('id', 'like', 'c%')).length;
    });
    expect(result).to.equal(2);
    expect((await db('sql_runner_t').select('id').where('id', 'like', 'c%')).length).to.equal(2);
  });

  it('inTransaction rolls back every write when fn throws, also after a failed statement', async () => {
    let caught: unknown;
    try {
      await inTransaction(db, async (trx) => {
        await trx('sql_runner_t').insert({ id: 'r1', flag: true });
        await trx('sql_runner_t').insert({ id: 'c1', flag: true });
      });
    } catch (err) {
      caught = err;
    }
    expect((caught as { code?: string })?.code).to.be.oneOf(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
    expect(await db('sql_runner_t').select('id').where('id', 'r1').first()).to.equal(undefined);
    // The connection is usable again and not left inside a transaction.
    await db('sql_runner_t').insert({ id: 'r2', flag: true });
    await inTransaction(db, (trx) => trx('sql_runner_t').whereIn('id', ['c1', 'c2', 'r2']).delete());
    expect(await db('sql_runner_t').select('id')).to.deep.equal([]);
  });

  it('concurrent transactions each see the other only once committed (read-modify-write keeps every increment)', async () => {
    await db('sql_runner_t').insert({ id: 'counter', flag: true, n: 0 });
    await Promise.all(
      Array.from({ length: 20 }, () =>
        inTransaction(db, async (trx) => {
          const row = (await trx('sql_runner_t').select('n').where('id', 'counter').forUpdate().first()) as { n: number };
          await new Promise((r) => setImmediate(r));
          await trx('sql_runner_t').update({ n: row.n + 1 }).where('id', 'counter');
        }),
      ),
    );
    expect(await db('sql_runner_t').select('n').where('id', 'counter').first()).to.deep.equal({ n: 20 });
    await db('sql_runner_t').delete();
  });

  it('locks rows read for update or share on PostgreSQL only (SQLite has one writer)', () => {
    const query = (mode: 'update' | 'share') => {
      const q = db('sql_runner_t').select('id');
      return (mode === 'update' ? q.forUpdate() : q.forShare()).toSQL().sql;
    };
    expect(query('update')).to.satisfy((s: string) => (t.kind === 'postgres' ? s.endsWith(' for update') : !s.includes(' for ')));
    expect(query('share')).to.satisfy((s: string) => (t.kind === 'postgres' ? s.endsWith(' for share') : !s.includes(' for ')));
  });
});

describe('SQLite write lock held by another process', function () {
  this.timeout(20_000);
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  let holder: ReturnType<typeof spawn> | undefined;
  before(async () => {
    t = await createTestDatabase('sqlite');
    await t.db.schema.createTable('lock_wait_t', (table) => {
      table.string('id', 64).primary();
    });
  });
  after(async () => {
    holder?.kill('SIGKILL');
    await t.drop();
  });

  /**
   * Another process takes the write lock and holds it until told to let go; resolves once it holds
   * it. `release()` resolves once the other process has committed: from then on the lock is free.
   */
  async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
    const script = `const D = require('better-sqlite3'); const d = new D(process.argv[1]); d.exec('begin immediate');
      process.stdout.write('held\\n'); process.stdin.once('data', () => { d.exec('commit'); d.close(); process.stdout.write('released\\n'); process.exit(0); });`;
    const child = spawn(process.execPath, ['-e', script, file], { stdio: ['pipe', 'pipe', 'inherit'] });
    holder = child;
    const said = (word: string) =>
      new Promise<void>((resolve, reject) => {
        const read = (chunk: Buffer) => {
          if (String(chunk).includes(word)) {
            child.stdout.off('data', read);
            resolve();
          }
        };
        child.stdout.on('data', read);
        child.once('error', reject);
        child.once('close', () => reject(new Error(`the lock holder ended before saying ${word}`)));
      });
    await said('held');
    return {
      release() {
        const released = said('released');
        child.stdin.write('release\n');
        return released;
      },
    };
  }


  it('a waiting write does not stop the server: other requests are answered meanwhile, and the write lands once the lock is free', async () => {
    const file = t.url.slice('sqlite:'.length);
    const db = createDb({ url: t.url, dataDir: '.', poolMax: 1, queryTimeoutMs: 5000 });
    try {
      const app = express();
      app.get('/ping', (_req, res) => res.send('pong'));
      const lock = await holdWriteLock(file);
      const write = watched(Promise.resolve(db('lock_wait_t').insert({ id: 'after-wait' })));
      // While the write waits for the other process, the event loop serves requests: each is
      // answered with the lock still held and the write still waiting (a synchronous wait for the
      // lock, better-sqlite3's busy timeout, would answer them only once the write had settled).
      for (let i = 0; i < 5; i++) {
        expect((await request(app).get('/ping')).text).to.equal('pong');
        expect(write.settled(), 'a request waited for the lock').to.equal(false);
      }
      await lock.release();
      await write.done;
      expect(await db('lock_wait_t').where('id', 'after-wait').first()).to.deep.equal({ id: 'after-wait' });
      // A transaction waits the same way (its BEGIN IMMEDIATE), and commits once the lock is free.
      const again = await holdWriteLock(file);
      const transaction = watched(inTransaction(db, (trx) => trx('lock_wait_t').insert({ id: 'in-transaction' })));
      expect((await request(app).get('/ping')).text).to.equal('pong');
      expect(transaction.settled(), 'the transaction committed while the lock was held').to.equal(false);
      await again.release();
      await transaction.done;
      expect(await db('lock_wait_t').where('id', 'in-transaction').first()).to.deep.equal({ id: 'in-transaction' });
    } finally {
      await db.destroy();
    }
  });

  it('a lock held past the database deadline fails the write as unavailable (SQLITE_BUSY), not a hang', async () => {
    const file = t.url.slice('sqlite:'.length);
    const db = createDb({ url: t.url, dataDir: '.', poolMax: 1, queryTimeoutMs: 300 });
    const lock = await holdWriteLock(file);
    // The waits between tries (node:timers/promises) and the deadline (Date) on a fake clock: the
    // write's answer is timed by the clock alone. The ESM bindings of node:timers/promises follow
    // the patched module only once synced.
    const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.now() });
    syncBuiltinESMExports();
    let write: ReturnType<typeof watched> | undefined;
    try {
      const asked = once(db, 'query');
      write = watched(Promise.resolve(db('lock_wait_t').insert({ id: 'never' })));
      // The statement is sent (and its deadline set) at the clock's start.
      await asked;
      // It gives up once the next wait would pass the deadline: not before 250 ms.
      await clock.tickAsync(249);
      expect(write.settled(), 'the write gave up before 250 ms').to.equal(false);
      await clock.tickAsync(1000 - 249);
      expect(write.settled(), 'the write still waited at 1000 ms').to.equal(true);
      const failed = await write.done.then(() => undefined, (err: { code?: string }) => err);
      expect(failed?.code).to.match(/^SQLITE_BUSY/);
    } finally {
      await lock.release();
      try {
        // A write still waiting (the test failed) ends at its next try, now that the lock is free.
        // Not runAllAsync: every timer of the process is on this clock, and one that sets itself
        // again (a client reconnecting) would never let it end.
        if (write && !write.settled()) await clock.tickAsync(1000);
      } finally {
        // Always: a fake clock left installed would stop every later test's timers.
        clock.uninstall();
        syncBuiltinESMExports();
        await db.destroy();
      }
    }
  });
});

describe('SQLite COMMIT refused', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Db;
  before(async () => {
    t = await createTestDatabase('sqlite');
    db = t.db;
    await db.schema.createTable('gc_parent', (table) => table.string('id', 64).notNullable().primary());
    await db.schema.createTable('gc_child', (table) => {
      table.string('id', 64).notNullable().primary();
      table.string('parent_id', 64).references('gc_parent.id');
    });
  });
  after(() => t.drop());

  it('a COMMIT refused by a constraint checked at commit stores nothing, and the connection is not left inside the transaction', async () => {
    const refused = await inTransaction(db, async (trx) => {
      await trx('gc_parent').insert({ id: 'kept?' });
      // A foreign key checked only at COMMIT: SQLite refuses the COMMIT and keeps the transaction open.
      await trx.raw('pragma defer_foreign_keys = on');
      await trx('gc_child').insert({ id: 'orphan', parent_id: 'missing' });
    }).then(() => undefined, (err: { code?: string }) => err);
    expect(refused?.code).to.equal('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(await db('gc_parent').select('id')).to.deep.equal([]);
    expect(await db('gc_child').select('id')).to.deep.equal([]);
    await inTransaction(db, (trx) => trx('gc_parent').insert({ id: 'after' }));
    expect(await db('gc_parent').select('id')).to.deep.equal([{ id: 'after' }]);
  });
});
