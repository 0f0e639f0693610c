import type { Knex } from 'knex';

// eddsa-jcs-2022 (vc-di-eddsa section 3.3.1 step 2) signs a proof configuration holding the
// document's @context and returns that @context in the proof. Credentials issued before this
// migration were signed that way but stored without proof.@context, so a standard verifier
// hashed something else. Adding it to the stored proof makes them verify as they are: the
// signature already covers exactly this value, so nothing is re-signed.
const BATCH = 500;

/** The rows as this migration found them. */
type Row = { seq: number; id: string; verifiable_credential: string };
/** A stored credential, as far as this migration reads it. */
type StoredVc = { '@context'?: unknown; proof?: Record<string, unknown> | unknown[] };

async function rewrite(knex: Knex, change: (vc: StoredVc) => boolean): Promise<void> {
  let after = 0;
  for (;;) {
    const rows = await knex<Row>('kpt_claims')
      .select('seq', 'id', 'verifiable_credential')
      .whereNotNull('verifiable_credential')
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(BATCH);
    if (!rows.length) return;
    for (const row of rows) {
      const vc = JSON.parse(row.verifiable_credential) as StoredVc;
      if (change(vc)) await knex('kpt_claims').update({ verifiable_credential: JSON.stringify(vc) }).where('id', row.id);
    }
    after = rows[rows.length - 1]!.seq;
  }
}

export async function up(knex: Knex): Promise<void> {
  await rewrite(knex, (vc) => {
    if (!vc.proof || Array.isArray(vc.proof) || vc.proof['@context'] !== undefined) return false;
    const { proofValue, ...options } = vc.proof;
    vc.proof = { ...options, '@context': vc['@context'], proofValue };
    return true;
  });
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, (vc) => {
    if (!vc.proof || Array.isArray(vc.proof) || vc.proof['@context'] === undefined) return false;
    delete vc.proof['@context'];
    return true;
  });
}
