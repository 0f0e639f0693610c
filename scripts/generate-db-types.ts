// Writes generated/db/database.ts: the row types of every table, read by kysely-codegen from a
// throwaway SQLite database the migrations have just built. The same columns exist on
// PostgreSQL; where the two drivers return different JavaScript types for one column, the type
// mapping below gives the union (booleans are 0/1 on SQLite; PostgreSQL's bigint is a string).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../src/platform/db/index.ts';
import { migrateLatest } from '../src/platform/db/migrate.ts';

const dir = mkdtempSync(join(tmpdir(), 'hearth-db-types-'));
try {
  const file = join(dir, 'schema.sqlite');
  const db = createDb({ url: `sqlite:${file}`, dataDir: dir, poolMax: 1 });
  await migrateLatest(db);
  await db.destroy();
  execFileSync(
    'npx',
    [
      '--no-install', 'kysely-codegen',
      '--dialect', 'sqlite',
      '--url', file,
      '--exclude-pattern', 'kysely_migration*',
      '--type-mapping', JSON.stringify({ boolean: 'boolean | number' }),
      '--overrides', JSON.stringify({ columns: { 'twin_status_index_counter.next_index': 'string | number' } }),
      '--out-file', 'generated/db/database.ts',
      '--log-level', 'error',
    ],
    { stdio: 'inherit' },
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
