import type { Kysely } from 'kysely';
import type { MigrationDb } from './index.ts';

// eddsa-jcs-2022 (vc-di-eddsa section 3.3.1 step 2) signs a proof configuration holding the
// document's @context and returns that @context in the proof. Credentials issued before this
// migration were signed that way but stored without proof.@context, so a standard verifier
// hashed something else. Adding it to the stored proof makes them verify as they are: the
// signature already covers exactly this value, so nothing is re-signed.
const BATCH = 500;

type Row = { id: string; verifiable_credential: string };
/** A stored credential, as far as this migration reads it. */
type StoredVc = { '@context'?: unknown; proof?: Record<string, unknown> | unknown[] };

/** The table as this migration found it. */
type Db = Kysely<{ kpt_claims: Row & { seq: number } }>;

async function rewrite(db: Db, change: (vc: StoredVc) => boolean): Promise<void> {
  let after = 0;
  for (;;) {
    const rows = await db
      .selectFrom('kpt_claims')
      .select(['seq', 'id', 'verifiable_credential'])
      .where('verifiable_credential', 'is not', null)
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(BATCH)
      .execute();
    if (!rows.length) return;
    for (const row of rows) {
      const vc = JSON.parse(row.verifiable_credential) as StoredVc;
      if (change(vc)) await db.updateTable('kpt_claims').set({ verifiable_credential: JSON.stringify(vc) }).where('id', '=', row.id).execute();
    }
    after = rows[rows.length - 1]!.seq;
  }
}

export async function up(db: MigrationDb): Promise<void> {
  await rewrite(db as unknown as Db, (vc) => {
    if (!vc.proof || Array.isArray(vc.proof) || vc.proof['@context'] !== undefined) return false;
    const { proofValue, ...options } = vc.proof;
    vc.proof = { ...options, '@context': vc['@context'], proofValue };
    return true;
  });
}

export async function down(db: MigrationDb): Promise<void> {
  await rewrite(db as unknown as Db, (vc) => {
    if (!vc.proof || Array.isArray(vc.proof) || vc.proof['@context'] === undefined) return false;
    delete vc.proof['@context'];
    return true;
  });
}
