// Gives each suite a fresh, migrated database: always SQLite (a temp file), and PostgreSQL too
// when TEST_DATABASE_URL is set (a schema of its own, dropped afterwards).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import { createDb, rowsOf, type Db, type DbClient } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { watched } from './fake-clock.ts';

export interface TestDatabase {
  kind: DbClient;
  /** The migrated database; set in the suite's before hook. */
  db: Db;
  /** What a second app instance needs to open the same database. */
  url: string;
  schema?: string;
  /** Opens another connection pool on the same database (a second "instance"). */
  open(): Db;
}

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

export function databaseKinds(): DbClient[] {
  return TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

export async function createTestDatabase(kind: DbClient): Promise<TestDatabase & { drop(): Promise<void> }> {
  const opened: Db[] = [];
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-test-'));
    const url = `sqlite:${join(dir, 'test.sqlite')}`;
    const open = () => {
      const db = createDb({ url, dataDir: dir, poolMax: 1 });
      opened.push(db);
      return db;
    };
    const db = open();
    await migrateLatest(db);
    return {
      kind, db, url, open,
      async drop() {
        await Promise.all(opened.map((d) => d.destroy()));
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const url = TEST_DATABASE_URL!;
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const open = () => {
    const db = createDb({ url, dataDir: '.', poolMax: 10, schema });
    opened.push(db);
    return db;
  };
  const db = open();
  await migrateLatest(db);
  return {
    kind, db, url, schema, open,
    async drop() {
      await Promise.all(opened.map((d) => d.destroy()));
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    },
  };
}

/**
 * Declares `describe(title [kind])` once per database kind. The body receives a handle whose
 * `db` is ready inside hooks and tests (fresh per suite, dropped after).
 */
export function forEachDatabase(title: string, body: (t: TestDatabase) => void): void {
  for (const kind of databaseKinds()) {
    describe(`${title} [${kind}]`, function () {
      const handle = { kind } as TestDatabase;
      let drop: (() => Promise<void>) | undefined;
      before(async function () {
        this.timeout(60_000);
        const created = await createTestDatabase(kind);
        Object.assign(handle, created);
        drop = () => created.drop();
      });
      after(async () => {
        await drop?.();
      });
      body(handle);
    });
  }
}

/**
 * The rows `sql` gives once it gives any, asked again as soon as each answer arrives, while
 * `request` (the one expected to block) is in flight; none once it has settled. PostgreSQL
 * announces nothing when a backend starts to wait for a lock: a test that needs a request
 * blocked on one asks pg_locks or pg_stat_activity until it is (as PostgreSQL's own
 * isolationtester does). Knex's 'query' event says only that the statement was sent, before the
 * server has reached the lock (and log_lock_waits writes to the server's log, after
 * deadlock_timeout). The wait ends on the request's own answer, not on a clock: a request that
 * never blocks answers, and the test's assertion on the rows fails.
 */
export async function untilRows<R>(db: Db, request: Promise<unknown>, sql: string, bindings: readonly unknown[] = []): Promise<R[]> {
  const { settled } = watched(request);
  while (!settled()) {
    const rows = await rowsOf<R>(db.raw(sql, bindings as Knex.RawBinding[]));
    if (rows.length) return rows;
  }
  return [];
}
