// The only SQL for the public base URLs (public-base-url.ts): the current one and those before it.
import { lockUntilCommit, type Sql } from '../../platform/db/sql.ts';

const CURRENT_SLOT = 'current';

/** Holds the base URLs until the transaction ends: instances starting at once record one URL, one at a time. */
export function holdBaseUrls(sql: Sql): Promise<void> {
  return lockUntilCommit(sql, 'public-base-url');
}

export async function currentBaseUrl(sql: Sql): Promise<string | undefined> {
  return (await sql('twin_public_base_urls').first('url').where('current_slot', CURRENT_SLOT))?.url;
}

/** Makes `url` the current base URL; the one before it stays recorded, retired at `at`. */
export async function makeCurrentBaseUrl(sql: Sql, url: string, at: string): Promise<void> {
  await sql('twin_public_base_urls').update({ current_slot: null, retired_at: at }).where('current_slot', CURRENT_SLOT).whereNot('url', url);
  await sql('twin_public_base_urls').insert({ url, current_slot: CURRENT_SLOT, recorded_at: at, retired_at: null }).onConflict('url').merge({ current_slot: CURRENT_SLOT, retired_at: null });
}
