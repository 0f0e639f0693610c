import { sql } from 'kysely';
import { dbClientOf } from '../index.ts';
import type { MigrationDb } from './index.ts';

// PostgreSQL: a verified claim's row (its signed credential, checks and body, about 4 kB) is
// compressed when it is stored. pglz, the default, was about 6% of PostgreSQL's CPU per claim
// under make bench; lz4 compressed the same values about twice as fast (20,000 rows: 210-285 ms
// against 415-440) to 1% more bytes. A server built without lz4 keeps pglz. Values stored
// before keep their compression until they are written again.
const COLUMNS = ['body', 'checks', 'reasons', 'credential', 'verifiable_credential'];

export async function up(db: MigrationDb): Promise<void> {
  if (dbClientOf(db) !== 'postgres') return;
  const { rows } = await sql<{ lz4: boolean }>`select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`.execute(db);
  if (rows[0]?.lz4) await setCompression(db, 'lz4');
}

export async function down(db: MigrationDb): Promise<void> {
  if (dbClientOf(db) !== 'postgres') return;
  await setCompression(db, 'default');
}

async function setCompression(db: MigrationDb, method: 'lz4' | 'default'): Promise<void> {
  await sql`alter table kpt_claims ${sql.join(COLUMNS.map((c) => sql`alter column ${sql.ref(c)} set compression ${sql.raw(method)}`))}`.execute(db);
}
