// The public base URL credentials are signed under (their status lists and evidence URLs) is the
// database's, not an instance's: the first start records it (PUBLIC_BASE_URL, else the local
// default) and every instance signs under it. A start with another PUBLIC_BASE_URL is refused;
// `hearth move-base-url <url>` moves it on purpose, and status lists made under an earlier URL
// keep it, so the credentials that name it still verify.
import { invalidConfig } from '../../config.ts';
import type { Db } from '../../platform/db/index.ts';
import { inTransaction } from '../../platform/db/sql.ts';
import { currentBaseUrl, holdBaseUrls, makeCurrentBaseUrl } from './public-base-url.repository.ts';
import type { PublicBase } from './kpt-context.ts';

/**
 * The database's public base URL, recorded from `configured` (else `fallback`) on the first
 * start. A `configured` URL other than the recorded one stops start-up, saying how to move it.
 */
export function settlePublicBaseUrl(db: Db, configured: PublicBase | undefined, fallback: PublicBase): Promise<PublicBase> {
  return inTransaction(db, async (sql) => {
    await holdBaseUrls(sql);
    const recorded = await currentBaseUrl(sql);
    if (!recorded) {
      await makeCurrentBaseUrl(sql, configured ?? fallback, new Date().toISOString());
      return configured ?? fallback;
    }
    if (configured !== undefined && configured !== recorded) {
      throw invalidConfig(
        'PUBLIC_BASE_URL',
        `is ${configured}, but this database signs credentials under ${recorded} (every instance uses the database's URL). ` +
          `Set it to ${recorded} or leave it unset; to move new credentials to ${configured}, run \`hearth move-base-url ${configured}\` once (credentials signed under earlier URLs keep verifying)`,
      );
    }
    return recorded;
  });
}

/** Moves the database's public base URL to `url`; the URL it was. New credentials name `url` once instances restart. */
export function moveBaseUrl(db: Db, url: PublicBase): Promise<PublicBase | undefined> {
  return inTransaction(db, async (sql) => {
    await holdBaseUrls(sql);
    const before = await currentBaseUrl(sql);
    if (before !== url) await makeCurrentBaseUrl(sql, url, new Date().toISOString());
    return before;
  });
}
