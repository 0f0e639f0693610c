// How PostgreSQL plans a claim's statements once it has statistics (autovacuum's ANALYZE), on a
// table of many collections: a test of what the rows hold cannot see a statement that reads the
// whole table to answer, only its cost can.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { rowsOf, type Db } from '../../src/platform/db/index.ts';
import { ClaimRepository } from '../../src/twins/claims/claims.repository.ts';
import { createTestDatabase, TEST_DATABASE_URL } from '../helpers/databases.ts';

/** Collections holding claims, and the claims each holds: the planner expects thousands in a group of any of them. */
const FULL_COLLECTIONS = 6;
const CLAIMS_EACH = 2000;

/** The plan PostgreSQL chooses for each statement `run` sends, as EXPLAIN's text. */
async function plansOf(db: Db, run: () => Promise<unknown>): Promise<string[]> {
  const sent: { sql: string; bindings: readonly Knex.RawBinding[] }[] = [];
  const onQuery = (q: { sql: string; bindings: readonly Knex.RawBinding[] }) => sent.push(q);
  db.on('query', onQuery);
  try {
    await run();
  } finally {
    db.off('query', onQuery);
  }
  const plans: string[] = [];
  for (const q of sent) {
    // The statement as sent names its values $1, $2...; a raw statement takes them as ?.
    const lines = await rowsOf<{ 'QUERY PLAN': string }>(db.raw(`explain ${q.sql.replace(/\$\d+/g, '?')}`, q.bindings as Knex.RawBinding[]));
    plans.push(lines.map((l) => l['QUERY PLAN']).join('\n'));
  }
  return plans;
}

describe('claim statements as PostgreSQL plans them with statistics [postgres]', function () {
  this.timeout(60_000);
  let db: Db;
  let drop: () => Promise<void>;

  before(async function () {
    if (!TEST_DATABASE_URL) this.skip();
    const t = await createTestDatabase('postgres');
    db = t.db;
    drop = () => t.drop();
    const { seq: _seq, ...collection } = (await db('kpt_collections').where('id', 'default').first())!;
    const ids = Array.from({ length: FULL_COLLECTIONS + 1 }, (_, i) => `plans-${i}`);
    await db('kpt_collections').insert(ids.map((id) => ({ ...collection, id, name: id })));
    // Verified intervention claims in every collection but the last, which holds reference claims
    // only: a programme's first claims, each counting an intervention group that has none.
    const insertClaims = (collections: string, group: string, status: string) =>
      db.raw(
        `insert into kpt_claims (id, claim_key, collection_id, household_did, test_group, status, start_date, end_date, days, total_kg,
           daily_logs, body, claim_cid, checks, reasons, submitted_by, created_at, updated_at)
         select 'kpt_plans_' || c || '_' || n, 'plans-' || c || '-' || n, 'plans-' || c, 'did:ixo:entity:plans' || c || n, ?, ?,
           '2026-03-02', '2026-03-04', 3, 7.5, '[2.5,2.5,2.5]', '{}', 'cid', '[]', '[]', 'did:ixo:entity:plans', '2026-03-05', '2026-03-05'
         from (select unnest(string_to_array(?, ','))::int as c) cs, generate_series(1, ?) n`,
        [group, status, collections, CLAIMS_EACH],
      );
    await insertClaims(Array.from({ length: FULL_COLLECTIONS }, (_, i) => i).join(','), 'intervention', 'verified');
    await insertClaims(String(FULL_COLLECTIONS), 'reference', 'pending');
    await db.raw('analyze kpt_claims');
  });

  after(async () => {
    await drop?.();
  });

  it("a claim counting its partners in a group that has none walks the collection's index, not the table", async () => {
    const empty = `plans-${FULL_COLLECTIONS}`;
    const repo = new ClaimRepository(db);
    let partners: Awaited<ReturnType<ClaimRepository['findPartnerClaims']>> | undefined;
    const plans = await plansOf(db, async () => {
      partners = await repo.findPartnerClaims(empty, 'intervention', { start: '2026-03-02', end: '2026-03-04' });
    });
    expect(partners).to.deep.equal({ present: false, aligned: false, alignedPending: false });
    expect(plans).to.have.length(1);
    expect(plans[0]).to.include('kpt_claims_collection_id_test_group_status_index');
    expect(plans[0]).to.not.match(/Seq Scan on kpt_claims/);
  });

  it('the same statement still finds the partners of a full group', async () => {
    const partners = await new ClaimRepository(db).findPartnerClaims('plans-0', 'intervention', { start: '2026-03-02', end: '2026-03-04' });
    expect(partners).to.deep.equal({ present: true, aligned: true, alignedPending: false });
  });
});
