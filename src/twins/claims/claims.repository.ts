// The only SQL for KPT claims but area A's read port (read-port.repository.ts): what every
// submission and read runs.
import { bundledContract, contractSchema } from '../../platform/contract.ts';
import { rowsOf, type Db } from '../../platform/db/index.ts';
import { locksUntilCommit, writesOneAtATime, type Sql } from '../../platform/db/sql.ts';
import { CLAIM_WRITERS, commitOrder, missingAnchor } from './claim-order.repository.ts';
import { EVENT_WRITERS } from '../events/events.ts';
import { cursorNotIssued } from '../paging.ts';
import type { ClaimStatus, Collection, Entity, KptClaim, TestGroup } from '../../../generated/openapi/types.gen.ts';
import type { NormalisedClaim, SealedCredential } from './claim-seal.ts';
import { findCollection } from './collections.repository.ts';
import { findEntityRowForShare, type EntityRow } from '../entities/entities.repository.ts';
import { insertEvidence } from './evidence.repository.ts';
import type { EvidenceRow } from './evidence.ts';
import type { ReportClaim } from '../report/report.ts';
import type { KptClaims } from '../../../generated/db/tables.ts';
import { periodOfRow, StoredClaim, type ClaimRow, type Period } from './stored-claim.ts';

export { StoredClaim } from './stored-claim.ts';

/** Every claim status, as the contract lists them. */
const CLAIM_STATUSES = contractSchema(bundledContract(), 'ClaimStatus').enum as ClaimStatus[];


/** A new claim's row: its credential's status has not changed (the columns' defaults). */
type NewClaimRow = Omit<ClaimRow, 'seq' | 'credential_revoked' | 'credential_suspended' | 'credential_status_changed_at'>;

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

/** A change to the claim `id`, made only while it is pending (updateIfPending), its status-list index included. */
export interface PendingClaimChange {
  id: string;
  change: ClaimChange & { statusListIndex: number | null };
}

/** The columns a verdict sets: the status, its checks and reasons, and the credential (none: none). */
function verdictColumns(v: Pick<NewClaim, 'status' | 'checks' | 'reasons' | 'credential'>) {
  return {
    status: v.status,
    checks: JSON.stringify(v.checks),
    reasons: JSON.stringify(v.reasons),
    credential: v.credential?.summary ?? null,
    verifiable_credential: v.credential?.verifiableCredential ?? null,
    verified_at: v.credential?.verifiedAt ?? null,
  };
}

function claimRowOf(c: NewClaim): NewClaimRow {
  const { request } = c;
  return {
    id: c.id,
    claim_key: c.claimKey,
    collection_id: request.collectionId,
    household_did: request.householdId,
    test_group: request.testGroup,
    start_date: request.testPeriod?.startDate ?? null,
    end_date: request.testPeriod?.endDate ?? null,
    days: request.fuelMeasurements.dailyLogs.length,
    total_kg: request.fuelMeasurements.total,
    daily_logs: JSON.stringify(request.fuelMeasurements.dailyLogs),
    body: JSON.stringify(request),
    claim_cid: c.claimCid,
    ...verdictColumns(c),
    submitted_by: c.submittedBy,
    created_at: c.at,
    updated_at: c.at,
    status_list_index: c.statusListIndex,
  };
}

function claimUpdateOf(c: ClaimChange): ClaimUpdate {
  return {
    ...verdictColumns(c),
    updated_at: c.updatedAt,
    ...(c.statusListIndex === undefined ? {} : { status_list_index: c.statusListIndex }),
  };
}

/** What a submission checks of its household's entity, when it is one: who controls it. */
type SubmissionHousehold = Pick<Entity, 'controller'>;

const householdOf = (r: EntityRow | undefined): SubmissionHousehold | undefined => r && { controller: r.controller };

/** What a pending claim's reconcile reads first (ClaimRepository.readAfterGroup). */
export interface ReconcileReading {
  /** The claim as it is now. */
  current: StoredClaim;
  collection: Collection;
  partners: PartnerClaims;
}

/**
 * A claim found by Idempotency-Key, with the hash of the request that bound the key and the
 * status and JSON body it was answered (each null for keys bound before it was recorded).
 */
export interface IdempotentClaim {
  claim: StoredClaim;
  requestHash: string | null;
  responseStatus: number | null;
  responseBody: string | null;
}

type IdempotentClaimRow = ClaimRow & { request_hash: string | null; response_status: number | null; response_body: string | null };

const idempotentClaimOf = (row: IdempotentClaimRow | undefined): IdempotentClaim | undefined =>
  row && { claim: new StoredClaim(row), requestHash: row.request_hash, responseStatus: row.response_status, responseBody: row.response_body };

/** A caller's Idempotency-Key. */
interface KeyOfCaller {
  principalDid: string;
  key: string;
}

/** What a submission opens with (ClaimRepository.openSubmission). */
export interface SubmissionToOpen {
  householdDid: string;
  collectionId: string;
  /** The claim's group. */
  group: TestGroup;
  /** The group whose claims of the collection are counted: the claim's partners. */
  countedGroup: TestGroup;
  period: Period | undefined;
  correction: boolean;
  idempotency: KeyOfCaller | undefined;
}

/** What a submission reads first (ClaimRepository.openSubmission). */
export interface OpenedSubmission {
  collection: Collection | undefined;
  household: SubmissionHousehold | undefined;
  householdClaims: HouseholdClaim[];
  partners: PartnerClaims;
  /** The claim the caller's Idempotency-Key is bound to, if asked and bound. */
  bound: IdempotentClaim | undefined;
}

/** What the conflict rules compare of a household's claims. */
export interface HouseholdClaim {
  id: string;
  claimKey: string;
  collectionId: string;
  testGroup: TestGroup;
  status: ClaimStatus;
  period: Period | undefined;
  /** Parsed when read: only a claim of the same period is compared by its logs. */
  readonly dailyLogs: number[];
}

type HouseholdClaimRow = Pick<ClaimRow, (typeof HOUSEHOLD_COLUMNS)[number]>;

const householdClaimOf = (r: HouseholdClaimRow): HouseholdClaim => ({
  id: r.id,
  claimKey: r.claim_key,
  collectionId: r.collection_id,
  testGroup: r.test_group,
  status: r.status,
  period: periodOfRow(r),
  get dailyLogs() {
    return JSON.parse(r.daily_logs) as number[];
  },
});

export interface ClaimFilter {
  collection?: string;
  household?: string;
  group?: TestGroup;
  status?: ClaimStatus;
  /** ISO time in UTC (toISOString's form, which sorts as text): claims updated at or after it. */
  updatedSince?: string;
  afterSeq?: number;
  limit: number;
}

type ClaimUpdate = Pick<ClaimRow, 'status' | 'checks' | 'reasons' | 'credential' | 'verifiable_credential' | 'updated_at' | 'verified_at'> &
  Partial<Pick<ClaimRow, 'status_list_index'>>;

/** The advisory lock a submission to a group of a collection holds (shared) until its commit. */
const groupLockName = (collectionId: string, group: TestGroup) => `kpt-group:${collectionId}:${group}`;

/**
 * The advisory lock a claim's reconcile holds (shared) until its commit, and a correction
 * (exclusively): reconciles run at once, but never beside a correction in their collection.
 */
const reconcileLockName = (collectionId: string) => `kpt-reconcile:${collectionId}`;

/** The advisory lock a submission for a household holds until its commit. */
const householdLockName = (householdDid: string) => `kpt-household:${householdDid}`;

const HOUSEHOLD_COLUMNS = ['id', 'claim_key', 'collection_id', 'test_group', 'status', 'start_date', 'end_date', 'daily_logs'] as const;

/** What the rules and a new claim's store ask of the other group's claims in a collection. */
export interface PartnerClaims {
  /** Some are not rejected and their credential stands (rule 6). */
  present: boolean;
  /** Of those, some overlap the claim's test period (rule 7). */
  aligned: boolean;
  /** Some pending ones overlap it (only then must they be re-evaluated). */
  alignedPending: boolean;
}
/** PostgreSQL answers booleans, SQLite 0 or 1. */
type PartnersRow = { present: unknown; aligned: unknown; aligned_pending: unknown };
const partnersOf = (row: PartnersRow): PartnerClaims => ({
  present: Boolean(row.present),
  aligned: Boolean(row.aligned),
  alignedPending: Boolean(row.aligned_pending),
});

/** A claim just inserted: its `seq` is not read back (nothing of a new claim's submission uses it). */
const inserted = (row: NewClaimRow): StoredClaim =>
  new StoredClaim({ seq: 0, credential_revoked: false, credential_suspended: false, credential_status_changed_at: null, ...row });

/** The database keeps a claim's group and status as text; they hold only the contract's values. */
const asClaimRows = (rows: KptClaims[]) => rows as ClaimRow[];
const stored = (row: KptClaims | undefined): StoredClaim | undefined => row && new StoredClaim(row as ClaimRow);

/**
 * 1 when a claim of a group of a collection is not rejected and its condition holds, else 0: the
 * first such claim in the collection's index order. Not an `exists`: with statistics saying a
 * group holds thousands of claims, PostgreSQL plans one as a scan of the whole table expected to
 * stop at once, which reads every claim when the group has none that passes (a programme's first
 * claims); ordered by the index's columns, it walks the group's part of the index.
 */
const someClaim = (condition: string) =>
  `coalesce((select 1 from kpt_claims c where c.collection_id = ? and c.test_group = ? and c.status <> 'rejected' and ${condition} order by c.collection_id, c.test_group, c.status limit 1), 0)`;
const STANDING = 'not (c.credential_revoked or c.credential_suspended)';
const OVERLAPS = 'c.start_date <= ? and c.end_date >= ?';

/**
 * findPartnerClaims's statement: whether some claim of the group is there, each test stopping at
 * the first claim that passes it (the collection's index), so a claim costs the same in a large
 * collection as in a small one. ISO dates compare as strings; without a period (null bounds)
 * nothing overlaps. A claim whose credential is revoked or suspended is withdrawn data: it
 * neither makes a control group present nor aligns. A pending claim has no credential, so none
 * of them is withdrawn.
 */
const PARTNERS_SQL = `select ${someClaim(STANDING)} as present, ${someClaim(`${OVERLAPS} and ${STANDING}`)} as aligned,
  ${someClaim(`c.status = 'pending' and ${OVERLAPS}`)} as aligned_pending`;

/** Claims, over the database or a transaction (`inTransaction`). */
export class ClaimRepository {
  constructor(private readonly sql: Sql) {}

  private claims() {
    return this.sql('kpt_claims');
  }

  async findById(id: string): Promise<StoredClaim | undefined> {
    return stored(await this.claims().where('id', id).first());
  }

  /**
   * findById, the row locked until the transaction ends: a transaction changing it (a correction
   * rejecting it, a change of its credential's status) waits for this one, or this read waits for
   * that change.
   */
  async findByIdForUpdate(id: string): Promise<StoredClaim | undefined> {
    return stored(await this.claims().where('id', id).forUpdate().first());
  }

  async findByClaimKey(claimKey: string): Promise<StoredClaim | undefined> {
    return stored(await this.claims().where('claim_key', claimKey).first());
  }

  /** The claim a caller's Idempotency-Key is bound to, with the hash of the request it came with. */
  async findByIdempotencyKey(principalDid: string, key: string): Promise<IdempotentClaim | undefined> {
    const row = (await this.claims()
      .select('kpt_claims.*', 'k.request_hash', 'k.response_status', 'k.response_body')
      .join('kpt_idempotency_keys as k', 'k.claim_id', 'kpt_claims.id')
      .where('k.principal_did', principalDid)
      .where('k.idempotency_key', key)
      .first()) as IdempotentClaimRow | undefined;
    return idempotentClaimOf(row);
  }

  /**
   * Binds a caller's key to a claim, with the status it is answered and its body when known
   * already; a key already bound stays as it is (`ifUnbound`: the caller checks). Otherwise a
   * key bound meanwhile fails the submission (a unique violation).
   */
  async bindIdempotencyKey(
    principalDid: string,
    key: string,
    binding: { claimId: string; requestHash: string; responseStatus: number; responseBody?: string; at: string },
    ifUnbound = false,
  ): Promise<void> {
    const insert = this.sql('kpt_idempotency_keys').insert({
      principal_did: principalDid,
      idempotency_key: key,
      claim_id: binding.claimId,
      request_hash: binding.requestHash,
      response_status: binding.responseStatus,
      response_body: binding.responseBody ?? null,
      created_at: binding.at,
    });
    await (ifUnbound ? insert.onConflict(['principal_did', 'idempotency_key']).ignore() : insert);
  }

  /** The body a key's claim was answered, once the answer is known (after the commit); a key bound to another claim is left as it is. */
  async keepIdempotentAnswer(principalDid: string, key: string, claimId: string, body: string): Promise<void> {
    await this.sql('kpt_idempotency_keys').update({ response_body: body }).where({ principal_did: principalDid, idempotency_key: key, claim_id: claimId });
  }

  /**
   * What a submission reads first: its collection, its household's entity (locked for share:
   * findEntityRowForShare), the household's claims in every collection, what the partner
   * group's claims of the collection hold (findPartnerClaims) and, for a caller's
   * Idempotency-Key, the claim bound to it. On PostgreSQL it first takes the locks that make
   * submissions for one household wait for each other until the transaction ends, whatever
   * their collection (two contradictory claims cannot both pass the overlap check), and that mark
   * a submission to the group of the collection in flight until then (`readAfterGroup`):
   * submissions to a collection never wait for each other here. A correction (rare) changes a
   * claim other submissions may re-evaluate: it runs alone in its collection instead. The reads
   * come after the locks, so they see every claim committed while the locks were waited for.
   * CLAIM_WRITERS and EVENT_WRITERS come before the row lock, which gives the transaction its id.
   */
  async openSubmission(s: SubmissionToOpen): Promise<OpenedSubmission> {
    const household = { name: householdLockName(s.householdDid), mode: 'exclusive' } as const;
    const exclusive = (name: string) => ({ name, mode: 'exclusive' }) as const;
    await locksUntilCommit(
      this.sql,
      s.correction
        ? [CLAIM_WRITERS, EVENT_WRITERS, household, exclusive(groupLockName(s.collectionId, 'reference')), exclusive(groupLockName(s.collectionId, 'intervention')), exclusive(reconcileLockName(s.collectionId))]
        : [CLAIM_WRITERS, EVENT_WRITERS, household, { name: groupLockName(s.collectionId, s.group), mode: 'shared' }],
    );
    const { household: householdClaims, partners } = await this.householdAndPartners(s.householdDid, s.collectionId, s.countedGroup, s.period);
    return {
      collection: await findCollection(this.sql, s.collectionId),
      household: householdOf(await findEntityRowForShare(this.sql, s.householdDid)),
      householdClaims,
      partners,
      bound: s.idempotency && (await this.findByIdempotencyKey(s.idempotency.principalDid, s.idempotency.key)),
    };
  }

  /**
   * What a pending claim's reconcile reads, outside any transaction; undefined where writes run
   * one at a time (SQLite): the claim's own count then saw every claim committed before it, and
   * every later submission saw the claim. Otherwise it first waits until no
   * submission to `group` of the claim's collection is in flight (their lock, taken in a
   * statement of its own, which lets it go at once): each read after it sees every claim of
   * `group` that counted its partners before the claim committed. It holds nothing, so the
   * reconciles of a group's claims neither wait for each other nor hold up submissions. Then:
   * the claim as it is now, its collection and the claim's partners in `group`.
   */
  async readAfterGroup(claim: StoredClaim, group: TestGroup): Promise<ReconcileReading | undefined> {
    if (writesOneAtATime(this.sql)) return undefined;
    const { collectionId, period } = claim;
    await locksUntilCommit(this.sql, [{ name: groupLockName(collectionId, group), mode: 'exclusive' }]);
    const current = (await this.findById(claim.id))!;
    const collection = (await findCollection(this.sql, collectionId))!;
    return { current, collection, partners: await this.findPartnerClaims(collectionId, group, period) };
  }

  /**
   * Holds corrections in the collection back until the transaction ends (and waits for one in
   * flight); other reconciles and submissions go on. First in its transaction: it opens event writes.
   */
  async holdCorrectionsBack(collectionId: string): Promise<void> {
    await locksUntilCommit(this.sql, [EVENT_WRITERS, { name: reconcileLockName(collectionId), mode: 'shared' }]);
  }

  /** Every claim of a household, in any collection, with what the conflict rules compare. */
  async findByHousehold(householdDid: string): Promise<HouseholdClaim[]> {
    const rows = (await this.claims().select(...HOUSEHOLD_COLUMNS).where('household_did', householdDid).orderBy('seq')) as HouseholdClaimRow[];
    return rows.map(householdClaimOf);
  }

  /**
   * Whether a group of a collection holds claims that are not rejected and stand, whether some of
   * them overlap [start, end], and whether some pending ones do (only then must they be
   * re-evaluated).
   */
  async findPartnerClaims(collectionId: string, group: TestGroup, period?: Period): Promise<PartnerClaims> {
    const [end, start] = [period?.end ?? null, period?.start ?? null];
    const rows = await rowsOf<PartnersRow>(this.sql.raw(PARTNERS_SQL, [collectionId, group, collectionId, group, end, start, collectionId, group, end, start]));
    return partnersOf(rows[0]!);
  }

  /** findByHousehold and findPartnerClaims. */
  async householdAndPartners(
    householdDid: string,
    collectionId: string,
    group: TestGroup,
    period?: Period,
  ): Promise<{ household: HouseholdClaim[]; partners: PartnerClaims }> {
    return { household: await this.findByHousehold(householdDid), partners: await this.findPartnerClaims(collectionId, group, period) };
  }

  /** Pending claims of a group in a collection whose test period overlaps [start, end], in `seq` order. */
  async findPendingOverlapping(collectionId: string, group: TestGroup, period: Period): Promise<StoredClaim[]> {
    const rows = asClaimRows(await this.pendingOverlapping(collectionId, group, period));
    return rows.map((r) => new StoredClaim(r));
  }

  /**
   * findPendingOverlapping, the rows locked for update in `seq` order: a transaction that locked
   * them first is waited for, and the claims it changed are no longer pending here.
   */
  async lockPendingOverlapping(collectionId: string, group: TestGroup, period: Period): Promise<StoredClaim[]> {
    const rows = asClaimRows(await this.pendingOverlapping(collectionId, group, period).forUpdate());
    return rows.map((r) => new StoredClaim(r));
  }

  private pendingOverlapping(collectionId: string, group: TestGroup, period: Period) {
    return this.claims()
      .where({ collection_id: collectionId, test_group: group, status: 'pending' })
      .where('start_date', '<=', period.end)
      .where('end_date', '>=', period.start)
      .orderBy('seq');
  }

  /**
   * Inserts a claim with its evidence (stored under its CID). It waits for no other insert: on
   * PostgreSQL its row records its transaction, which is how followers page (commitOrder in
   * claim-order.repository.ts). A claim stored meanwhile under the same key fails the unit of work (a
   * unique violation). The claim as stored.
   */
  async insertWithEvidence(evidence: EvidenceRow, claim: NewClaim): Promise<StoredClaim> {
    const row = claimRowOf(claim);
    await insertEvidence(this.sql, evidence);
    await this.claims().insert(row);
    return inserted(row);
  }

  /** Frees a rejected claim's key for its corrected resubmission. */
  async releaseClaimKey(id: string, replacementKey: string): Promise<void> {
    await this.claims().update({ claim_key: replacementKey }).where('id', id);
  }

  async update(id: string, change: ClaimChange): Promise<void> {
    await this.claims().update(claimUpdateOf(change)).where('id', id);
  }

  /**
   * Updates claims only while they are still pending: of two transactions re-evaluating one claim
   * at once, the later waits for the earlier and then changes nothing. The changes applied.
   */
  async updateIfPending(changes: readonly PendingClaimChange[]): Promise<PendingClaimChange[]> {
    const applied: PendingClaimChange[] = [];
    for (const c of changes) {
      const n = await this.claims().update({ ...claimUpdateOf(c.change), status_list_index: c.change.statusListIndex }).where({ id: c.id, status: 'pending' });
      if (n) applied.push(c);
    }
    return applied;
  }

  /** One page (and one row more, to tell whether another follows) of the claims a filter matches. */
  async list(f: ClaimFilter): Promise<StoredClaim[]> {
    const order = commitOrder(this.sql, 'kpt_claims');
    const q = this.claims();
    if (order.horizon) q.whereRaw(order.horizon.sql, order.horizon.bindings);
    if (f.collection) q.where('collection_id', f.collection);
    if (f.household) q.where('household_did', f.household);
    if (f.group) q.where('test_group', f.group);
    if (f.status) q.where('status', f.status);
    if (f.updatedSince) q.where('updated_at', '>=', f.updatedSince);
    if (f.afterSeq !== undefined) {
      const after = order.relativeTo('>', f.afterSeq);
      q.whereRaw(after.sql, after.bindings);
    }
    const rows = asClaimRows(await q.orderByRaw(order.orderBy('asc')).limit(f.limit + 1));
    if (await missingAnchor(this.sql, order, f.afterSeq)) throw cursorNotIssued();
    return rows.map((r) => new StoredClaim(r));
  }

  /**
   * How many claims there are in each status (the metrics' gauge), every status of the contract
   * included: a status without claims is 0, not a series that vanishes (alerts on absent() or
   * rate() would misread it).
   */
  async countByStatus(): Promise<{ status: ClaimStatus; count: number }[]> {
    const rows: { status: ClaimStatus; count: number | string }[] = await this.claims().select('status').count({ count: '*' }).groupBy('status');
    const counts = new Map(rows.map((r) => [r.status, Number(r.count)]));
    return CLAIM_STATUSES.map((status) => ({ status, count: counts.get(status) ?? 0 }));
  }

  /** Claims of a collection rejected on KPT rule 5 (random selection): the report keeps them apart. */
  async countRejectedOnSelection(collectionId: string): Promise<number> {
    const row = (await this.claims()
      .where({ collection_id: collectionId, status: 'rejected' })
      .where('reasons', 'like', '%"rule":"random-selection-verified"%')
      .count({ n: '*' })
      .first()) as { n: number | string };
    return Number(row.n);
  }

  /**
   * Verified claims of a collection, as the campaign report reads them: those whose credential
   * stands, and how many others it leaves out because their credential is revoked or suspended.
   */
  async findVerifiedInCollection(collectionId: string): Promise<{ counted: ReportClaim[]; withdrawn: number }> {
    const rows = (await this.claims()
      .select('household_did', 'test_group', 'days', 'total_kg', 'credential_revoked', 'credential_suspended')
      .where({ collection_id: collectionId, status: 'verified' })
      .orderBy('seq')) as Pick<ClaimRow, 'household_did' | 'test_group' | 'days' | 'total_kg' | 'credential_revoked' | 'credential_suspended'>[];
    // SQLite answers booleans as 0/1.
    const stands = (r: { credential_revoked: unknown; credential_suspended: unknown }) => !Number(r.credential_revoked) && !Number(r.credential_suspended);
    return {
      counted: rows.filter(stands).map((r) => ({ household: r.household_did, group: r.test_group, days: r.days, totalKg: r.total_kg })),
      withdrawn: rows.filter((r) => !stands(r)).length,
    };
  }
}

/** One claim by id, or undefined. */
export async function findClaimById(db: Db, id: string): Promise<KptClaim | undefined> {
  return (await new ClaimRepository(db).findById(id))?.toKptClaim();
}
