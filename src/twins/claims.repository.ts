// The only SQL for KPT claims but area A's read port (read-port.ts). The repository is plain SQL
// (platform/db/sql.ts): it is what every submission and read runs.
import type { Db } from '../platform/db/index.ts';
import { advisoryLockCalls, insertInto, locksUntilCommit, sqlOf, updateWhere, type AdvisoryLock, type Binding, type Sql } from '../platform/db/sql.ts';
import { CLAIM_WRITERS, commitOrder } from './claim-order.ts';
import type { ClaimStatus, KptClaim, TestGroup } from '../../generated/openapi/types.gen.ts';
import type { NormalisedClaim, SealedCredential } from './claim-seal.ts';
import { findCollection, type CollectionRow } from './collections.repository.ts';
import { findEntityRowForShare, type EntityRow } from './entities.repository.ts';
import type { ReportClaim } from './report.ts';

export interface ClaimRow {
  seq: number;
  id: string;
  claim_key: string;
  collection_id: string;
  household_did: string;
  test_group: TestGroup;
  status: ClaimStatus;
  start_date: string | null;
  end_date: string | null;
  days: number;
  total_kg: number;
  daily_logs: string;
  body: string;
  claim_cid: string;
  checks: string;
  reasons: string;
  credential: string | null;
  verifiable_credential: string | null;
  submitted_by: string;
  created_at: string;
  updated_at: string;
  verified_at: string | null;
  /** Its credential's index in the status lists (credential-status.ts); null before migration 103 or without one. */
  status_list_index: number | null;
}

type NewClaimRow = Omit<ClaimRow, 'seq'>;

/** A claim the service decided to store: its request, and what the rules and the seal made of it. */
export interface NewClaim {
  id: string;
  /** Identity of its measurement (an identical resubmission has the same). */
  claimKey: string;
  /** The request, defaults filled in: stored as the claim's body. */
  request: NormalisedClaim;
  status: ClaimStatus;
  checks: KptClaim['checks'];
  reasons: KptClaim['reasons'];
  claimCid: string;
  submittedBy: string;
  /** When it was submitted: its creation and last update. */
  at: string;
  /** Present when it is verified. */
  credential?: SealedCredential;
  statusListIndex: number | null;
}

/** A new status of a stored claim, with its checks and reasons and the credential it has from now on (none: none). */
export interface ClaimChange {
  status: ClaimStatus;
  checks: KptClaim['checks'];
  reasons: KptClaim['reasons'];
  credential: SealedCredential | undefined;
  updatedAt: string;
  /** Left as it is when absent. */
  statusListIndex?: number | null;
}

function claimRowOf(c: NewClaim): NewClaimRow {
  const { request } = c;
  return {
    id: c.id,
    claim_key: c.claimKey,
    collection_id: request.collectionId,
    household_did: request.householdId,
    test_group: request.testGroup,
    status: c.status,
    start_date: request.testPeriod?.startDate ?? null,
    end_date: request.testPeriod?.endDate ?? null,
    days: request.fuelMeasurements.dailyLogs.length,
    total_kg: request.fuelMeasurements.total,
    daily_logs: JSON.stringify(request.fuelMeasurements.dailyLogs),
    body: JSON.stringify(request),
    claim_cid: c.claimCid,
    checks: JSON.stringify(c.checks),
    reasons: JSON.stringify(c.reasons),
    credential: c.credential?.summary ?? null,
    verifiable_credential: c.credential?.verifiableCredential ?? null,
    submitted_by: c.submittedBy,
    created_at: c.at,
    updated_at: c.at,
    verified_at: c.credential?.verifiedAt ?? null,
    status_list_index: c.statusListIndex,
  };
}

function claimUpdateOf(c: ClaimChange): ClaimUpdate {
  return {
    status: c.status,
    checks: JSON.stringify(c.checks),
    reasons: JSON.stringify(c.reasons),
    credential: c.credential?.summary ?? null,
    verifiable_credential: c.credential?.verifiableCredential ?? null,
    updated_at: c.updatedAt,
    verified_at: c.credential?.verifiedAt ?? null,
    ...(c.statusListIndex === undefined ? {} : { status_list_index: c.statusListIndex }),
  };
}

/** The credential a stored claim carries, as stored; undefined for one without. */
export function sealedCredentialOf(r: ClaimRow): SealedCredential | undefined {
  return r.credential !== null && r.verifiable_credential !== null && r.verified_at !== null
    ? { summary: r.credential, verifiableCredential: r.verifiable_credential, verifiedAt: r.verified_at }
    : undefined;
}
/** A claim found by Idempotency-Key; `request_hash` is null for keys bound before it was recorded. */
export type IdempotentClaimRow = ClaimRow & { request_hash: string | null };
export type HouseholdClaimRow = Pick<ClaimRow, 'id' | 'claim_key' | 'collection_id' | 'test_group' | 'status' | 'start_date' | 'end_date' | 'daily_logs'>;

export function claimFromRow(r: ClaimRow): KptClaim {
  const body = JSON.parse(r.body) as NormalisedClaim;
  return {
    id: r.id,
    type: 'KPTClaim',
    status: r.status,
    collectionId: r.collection_id,
    householdId: r.household_did,
    testGroup: r.test_group,
    fuelMeasurements: body.fuelMeasurements,
    ...(body.testPeriod ? { testPeriod: body.testPeriod } : {}),
    ...(body.cookingSessions ? { cookingSessions: body.cookingSessions } : {}),
    ...(body.evidence ? { evidence: body.evidence } : {}),
    ...(body.externalFactors ? { externalFactors: body.externalFactors } : {}),
    ...(body.corrects ? { corrects: body.corrects } : {}),
    claimCid: r.claim_cid,
    checks: JSON.parse(r.checks) as KptClaim['checks'],
    reasons: JSON.parse(r.reasons) as KptClaim['reasons'],
    ...(r.credential ? { credential: JSON.parse(r.credential) as KptClaim['credential'] } : {}),
    ...(r.verifiable_credential ? { verifiableCredential: JSON.parse(r.verifiable_credential) as KptClaim['verifiableCredential'] } : {}),
    submittedBy: r.submitted_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.verified_at ? { verifiedAt: r.verified_at } : {}),
  };
}

export interface ClaimFilter {
  collection?: string;
  household?: string;
  group?: TestGroup;
  status?: ClaimStatus;
  afterSeq?: number;
  limit: number;
}

type ClaimUpdate = Pick<ClaimRow, 'status' | 'checks' | 'reasons' | 'credential' | 'verifiable_credential' | 'updated_at' | 'verified_at'> &
  Partial<Pick<ClaimRow, 'status_list_index'>>;

/** The advisory lock a submission to a group of a collection holds (shared) until its commit. */
const groupLockName = (collectionId: string, group: TestGroup) => `kpt-group:${collectionId}:${group}`;

const HOUSEHOLD_COLUMNS = 'id, claim_key, collection_id, test_group, status, start_date, end_date, daily_logs';

export interface GroupCounts {
  all: number;
  aligned: number;
  alignedPending: number;
}
type CountsRow = { n: number | string; aligned: number | string; aligned_pending: number | string };
const countsOf = (row: CountsRow): GroupCounts => ({ all: Number(row.n), aligned: Number(row.aligned), alignedPending: Number(row.aligned_pending) });

/**
 * countGroupClaims's statement, after a `leading` select-list item if given: the overlap counts
 * are conditional sums (ISO dates compare as strings).
 */
function groupCounts(collectionId: string, group: TestGroup, period?: { start: string; end: string }, leading?: string): [string, Binding[]] {
  const overlap = 'start_date <= ? and end_date >= ?';
  return [
    `select ${leading ? `${leading}, ` : ''}count(*) as n,
       ${period ? `coalesce(sum(case when ${overlap} then 1 else 0 end), 0)` : '0'} as aligned,
       ${period ? `coalesce(sum(case when status = 'pending' and ${overlap} then 1 else 0 end), 0)` : '0'} as aligned_pending
     from kpt_claims where collection_id = ? and test_group = ? and status <> 'rejected'`,
    [...(period ? [period.end, period.start, period.end, period.start] : []), collectionId, group],
  ];
}

/** A claim just inserted: its `seq` is not read back (nothing of a new claim's submission uses it). */
const storedRow = (row: NewClaimRow): ClaimRow => ({ seq: 0, ...row });

/** Claims, over a database (`sqlOf(db)`) or a transaction (`inTransaction`). */
export class ClaimRepository {
  constructor(private readonly sql: Sql) {}

  async findById(id: string): Promise<ClaimRow | undefined> {
    return this.sql.one<ClaimRow>('select * from kpt_claims where id = ?', [id]);
  }

  async findByClaimKey(claimKey: string): Promise<ClaimRow | undefined> {
    return this.sql.one<ClaimRow>('select * from kpt_claims where claim_key = ?', [claimKey]);
  }

  /** The claim a caller's Idempotency-Key is bound to, with the hash of the request it came with. */
  async findByIdempotencyKey(principalDid: string, key: string): Promise<IdempotentClaimRow | undefined> {
    return this.sql.one<IdempotentClaimRow>(
      `select kpt_claims.*, k.request_hash from kpt_claims join kpt_idempotency_keys k on k.claim_id = kpt_claims.id
       where k.principal_did = ? and k.idempotency_key = ?`,
      [principalDid, key],
    );
  }

  /** Binds a caller's key to a claim; a key already bound stays as it is (`ifUnbound`: the caller checks). */
  async bindIdempotencyKey(principalDid: string, key: string, binding: { claimId: string; requestHash: string; at: string }, ifUnbound = false): Promise<void> {
    const [insert, bindings] = insertInto('kpt_idempotency_keys', {
      principal_did: principalDid,
      idempotency_key: key,
      claim_id: binding.claimId,
      request_hash: binding.requestHash,
      created_at: binding.at,
    });
    await this.sql.run(ifUnbound ? `${insert} on conflict (principal_did, idempotency_key) do nothing` : insert, bindings);
  }

  /**
   * What a submission reads first, its collection and its household's entity (locked for share:
   * findEntityRowForShare), with the locks that make submissions for one household wait for
   * each other until the transaction ends, whatever their collection (two contradictory claims
   * cannot both pass the overlap check), and that mark a submission to the group of the
   * collection in flight until then (`waitForGroup`): submissions to a collection never wait for
   * each other here. A correction (rare) changes a claim other submissions may re-evaluate: it
   * runs alone in its collection instead. One round trip on PostgreSQL.
   */
  async openSubmission(
    householdDid: string,
    collectionId: string,
    group: TestGroup,
    correction: boolean,
  ): Promise<{ collection: CollectionRow | undefined; household: EntityRow | undefined }> {
    if (this.sql.dialect !== 'postgres') {
      return { collection: await findCollection(this.sql, collectionId), household: await findEntityRowForShare(this.sql, householdDid) };
    }
    const groups: TestGroup[] = correction ? ['reference', 'intervention'] : [group];
    // The locks first: CLAIM_WRITERS before the row lock below gives the transaction its id.
    const locks: AdvisoryLock[] = [
      CLAIM_WRITERS,
      { name: `kpt-household:${householdDid}`, mode: 'exclusive' },
      ...groups.map((g): AdvisoryLock => ({ name: groupLockName(collectionId, g), mode: correction ? 'exclusive' : 'shared' })),
    ];
    const row = (await this.sql.one<{ collection: CollectionRow | null; household: EntityRow | null }>(
      `select ${advisoryLockCalls(locks)},
         (select row_to_json(c) from kpt_collections c where c.id = ?) as collection,
         (select row_to_json(e) from twin_entities e where e.did = ? for share) as household`,
      [...locks.map((l) => l.name), collectionId, householdDid],
    ))!;
    return { collection: row.collection ?? undefined, household: row.household ?? undefined };
  }

  /**
   * Waits until no submission to the group of the collection is in flight, and holds new ones
   * back until the transaction ends: what runs after it sees every claim of the group that
   * counted its partners before it. Take it in a transaction of its own, before anything else.
   */
  waitForGroup(collectionId: string, group: TestGroup): Promise<void> {
    return locksUntilCommit(this.sql, [{ name: groupLockName(collectionId, group), mode: 'exclusive' }]);
  }

  /** Every claim of a household, in any collection, with what the conflict rules compare. */
  async findByHousehold(householdDid: string): Promise<HouseholdClaimRow[]> {
    return this.sql.all<HouseholdClaimRow>(`select ${HOUSEHOLD_COLUMNS} from kpt_claims where household_did = ? order by seq`, [householdDid]);
  }

  /**
   * Non-rejected claims of a group in a collection: how many, how many overlap [start, end], and
   * how many of those are pending (only then must they be re-evaluated).
   */
  async countGroupClaims(collectionId: string, group: TestGroup, period?: { start: string; end: string }): Promise<GroupCounts> {
    const [select, bindings] = groupCounts(collectionId, group, period);
    return countsOf((await this.sql.one(select, bindings))!);
  }

  /**
   * findByHousehold and countGroupClaims, in one round trip on PostgreSQL (the household's claims
   * as a JSON array beside the counts).
   */
  async householdAndGroupCounts(
    householdDid: string,
    collectionId: string,
    group: TestGroup,
    period?: { start: string; end: string },
  ): Promise<{ household: HouseholdClaimRow[]; counts: GroupCounts }> {
    if (this.sql.dialect !== 'postgres') {
      return { household: await this.findByHousehold(householdDid), counts: await this.countGroupClaims(collectionId, group, period) };
    }
    const household = `(select coalesce(json_agg(h order by h.seq), '[]'::json) from (select seq, ${HOUSEHOLD_COLUMNS} from kpt_claims where household_did = ?) h) as household`;
    const [select, bindings] = groupCounts(collectionId, group, period, household);
    const row = (await this.sql.one<CountsRow & { household: HouseholdClaimRow[] }>(select, [householdDid, ...bindings]))!;
    return { household: row.household, counts: countsOf(row) };
  }

  /** Pending claims of a group in a collection whose test period overlaps [start, end]. */
  async findPendingOverlapping(collectionId: string, group: TestGroup, period: { start: string; end: string }): Promise<ClaimRow[]> {
    return this.sql.all<ClaimRow>(
      `select * from kpt_claims where collection_id = ? and test_group = ? and status = 'pending'
       and start_date <= ? and end_date >= ? order by seq`,
      [collectionId, group, period.end, period.start],
    );
  }

  /**
   * Inserts a claim. It waits for no other insert: on PostgreSQL its row records its transaction,
   * which is how followers page (commitOrder in claim-order.ts).
   */
  async insert(claim: NewClaim): Promise<ClaimRow> {
    const row = claimRowOf(claim);
    await this.sql.run(...insertInto('kpt_claims', { ...row }));
    return storedRow(row);
  }

  /** `insert` after another insert (its evidence), in one round trip on PostgreSQL. The claim as stored. */
  async insertAfter([before, beforeBindings]: [string, Binding[]], claim: NewClaim): Promise<ClaimRow> {
    if (this.sql.dialect !== 'postgres') {
      await this.sql.run(before, beforeBindings);
      return this.insert(claim);
    }
    const row = claimRowOf(claim);
    const [insert, bindings] = insertInto('kpt_claims', { ...row });
    await this.sql.run(`with before as (${before}) ${insert}`, [...beforeBindings, ...bindings]);
    return storedRow(row);
  }

  /** Frees a rejected claim's key for its corrected resubmission. */
  async releaseClaimKey(id: string, replacementKey: string): Promise<void> {
    await this.sql.run(...updateWhere('kpt_claims', { claim_key: replacementKey }, { id }));
  }

  async update(id: string, change: ClaimChange): Promise<void> {
    await this.sql.run(...updateWhere('kpt_claims', { ...claimUpdateOf(change) }, { id }));
  }

  /**
   * Updates a claim only while it is still pending. Of two transactions re-evaluating one claim
   * at once, the later waits for the earlier and then changes nothing.
   */
  async updateIfPending(id: string, change: ClaimChange): Promise<void> {
    await this.sql.run(...updateWhere('kpt_claims', { ...claimUpdateOf(change) }, { id, status: 'pending' }));
  }

  /** One page (and one row more, to tell whether another follows) of the claims a filter matches. */
  async list(f: ClaimFilter): Promise<ClaimRow[]> {
    const conditions: [string, Binding][] = [];
    if (f.collection) conditions.push(['collection_id = ?', f.collection]);
    if (f.household) conditions.push(['household_did = ?', f.household]);
    if (f.group) conditions.push(['test_group = ?', f.group]);
    if (f.status) conditions.push(['status = ?', f.status]);
    const order = commitOrder(this.sql.dialect, 'kpt_claims');
    if (f.afterSeq !== undefined) conditions.push([order.relativeTo('>'), f.afterSeq]);
    const where = [...(order.horizon ? [order.horizon] : []), ...conditions.map(([c]) => c)];
    return this.sql.all<ClaimRow>(
      `select * from kpt_claims${where.length ? ` where ${where.join(' and ')}` : ''} order by ${order.orderBy('asc')} limit ?`,
      [...conditions.map(([, v]) => v), f.limit + 1],
    );
  }

  /** How many claims there are in each status (the metrics' gauge). */
  async countByStatus(): Promise<{ status: ClaimStatus; count: number }[]> {
    const rows = await this.sql.all<{ status: ClaimStatus; count: number | string }>('select status, count(*) as count from kpt_claims group by status');
    return rows.map((r) => ({ status: r.status, count: Number(r.count) }));
  }

  /** Verified claims of a collection, as the campaign report reads them. */
  async findVerifiedInCollection(collectionId: string): Promise<ReportClaim[]> {
    const rows = await this.sql.all<ClaimRow>(`select * from kpt_claims where collection_id = ? and status = 'verified' order by seq`, [collectionId]);
    return rows.map((r) => ({ household: r.household_did, group: r.test_group, days: r.days, totalKg: r.total_kg }));
  }
}

/** One claim by id, or undefined. */
export async function findClaimById(db: Db, id: string): Promise<KptClaim | undefined> {
  const row = await new ClaimRepository(sqlOf(db)).findById(id);
  return row ? claimFromRow(row) : undefined;
}
