import type { Knex } from 'knex';
import { onPostgres } from '../../platform/db/dialect.ts';

// PostgreSQL: a verified claim's row (its signed credential, checks and body, a few kB) is
// compressed when it is stored. lz4 compresses such values faster than pglz, the default, for
// about as many bytes (the figures are in the commit that added this migration). A server built
// without lz4 keeps pglz. Values stored before keep their compression until they are written again.
const COLUMNS = ['body', 'checks', 'reasons', 'credential', 'verifiable_credential'];

export async function up(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  const { rows } = await knex.raw<{ rows: { lz4: boolean }[] }>(`select 'lz4' = any(enumvals) as lz4 from pg_settings where name = 'default_toast_compression'`);
  if (rows[0]?.lz4) await setCompression(knex, 'lz4');
}

export async function down(knex: Knex): Promise<void> {
  if (!onPostgres(knex)) return;
  await setCompression(knex, 'default');
}

async function setCompression(knex: Knex, method: 'lz4' | 'default'): Promise<void> {
  await knex.raw(`alter table kpt_claims ${COLUMNS.map(() => `alter column ?? set compression ${method}`).join(', ')}`, COLUMNS);
}
