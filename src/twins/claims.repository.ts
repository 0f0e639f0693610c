// The only SQL for KPT claims but area A's read port (read-port.ts): what every submission and
// read runs.
import { sql, type RawBuilder, type Selectable } from 'kysely';
import { bundledContract, contractSchema } from '../platform/contract.ts';
import { dbClientOf, type Db } from '../platform/db/index.ts';
import { alsoAlone, prepared } from '../platform/db/prepared.ts';
import { advisoryLockCalls, advisoryLocks, inOneRoundTrip, inSharedRoundTrip, lockRows, writeBehind, type AdvisoryLock, type Sql } from '../platform/db/sql.ts';
import { CLAIM_WRITERS, commitOrder, missingAnchor } from './claim-order.ts';
import { cursorNotIssued } from './paging.ts';
import type { ClaimStatus, Collection, Entity, KptClaim, TestGroup } from '../../generated/openapi/types.gen.ts';
import type { KptClaims } from '../../generated/db/database.ts';
import type { NormalisedClaim, SealedCredential } from './claim-seal.ts';
import { collectionById, collectionFromRow, findCollection, type CollectionRow } from './collections.repository.ts';
import { findEntityRowForShare, type EntityRow } from './entities.repository.ts';
import { EVIDENCE_COLUMNS, insertEvidence, type EvidenceRow } from './evidence.ts';
import type { ReportClaim } from './report.ts';

/** Every claim status, as the contract lists them. */
const CLAIM_STATUSES = contractSchema(bundledContract(), 'ClaimStatus').enum as ClaimStatus[];

/** A stored claim; its credential's index in the status lists (credential-status.ts) is null without one. */
export type ClaimRow = Omit<Selectable<KptClaims>, 'test_group' | 'status'> & { test_group: TestGroup; status: ClaimStatus };

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

/** Every column a new claim's row sets (prepared inserts name them). */
const CLAIM_COLUMNS = [
  'id', 'claim_key', 'collection_id', 'household_did', 'test_group', 'status', 'start_date', 'end_date', 'days', 'total_kg', 'daily_logs',
  'body', 'claim_cid', 'checks', 'reasons', 'credential', 'verifiable_credential', 'submitted_by', 'created_at', 'updated_at', 'verified_at',
  'status_list_index',
] as const satisfies readonly (keyof NewClaimRow)[];

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

/** A test period, as the claim rules compare them (ISO dates). */
type Period = { start: string; end: string };

const periodOfRow = (r: Pick<ClaimRow, 'start_date' | 'end_date'>): Period | undefined =>
  r.start_date && r.end_date ? { start: r.start_date, end: r.end_date } : undefined;

/**
 * A stored claim, as the service reads it. Its JSON columns are parsed when read, not before
 * (a submission reads none of them), and its contract view is made from its row (claimJsonOf).
 */
export class StoredClaim {
  /** Its place in the order claims were stored in. */
  readonly seq: number;
  readonly id: string;
  /** Identity of its measurement (an identical resubmission has the same). */
  readonly claimKey: string;
  readonly collectionId: string;
  readonly householdId: string;
  readonly testGroup: TestGroup;
  readonly status: ClaimStatus;
  readonly period: Period | undefined;
  readonly claimCid: string;
  readonly submittedBy: string;
  /** Its credential's index in the status lists (credential-status.ts); null without one. */
  readonly statusListIndex: number | null;
  private parsedRequest: NormalisedClaim | undefined;

  constructor(private readonly row: ClaimRow) {
    this.seq = row.seq;
    this.id = row.id;
    this.claimKey = row.claim_key;
    this.collectionId = row.collection_id;
    this.householdId = row.household_did;
    this.testGroup = row.test_group;
    this.status = row.status;
    this.period = periodOfRow(row);
    this.claimCid = row.claim_cid;
    this.submittedBy = row.submitted_by;
    this.statusListIndex = row.status_list_index;
  }

  /** The request it was submitted with, defaults filled in. */
  get request(): NormalisedClaim {
    return (this.parsedRequest ??= JSON.parse(this.row.body) as NormalisedClaim);
  }

  get checks(): KptClaim['checks'] {
    return JSON.parse(this.row.checks) as KptClaim['checks'];
  }

  get reasons(): KptClaim['reasons'] {
    return JSON.parse(this.row.reasons) as KptClaim['reasons'];
  }

  /** The credential it carries, as stored; undefined for one without. */
  get credential(): SealedCredential | undefined {
    const r = this.row;
    return r.credential !== null && r.verifiable_credential !== null && r.verified_at !== null
      ? { summary: r.credential, verifiableCredential: r.verifiable_credential, verifiedAt: r.verified_at }
      : undefined;
  }

  /** The claim as the contract shows it. */
  toKptClaim(): KptClaim {
    return JSON.parse(this.toJson()) as KptClaim;
  }

  /** toKptClaim's JSON text, made without parsing the stored credential (claimJsonOf). */
  toJson(): string {
    return claimJsonOf(this.row);
  }
}

/** What a pending claim's reconcile reads first (ClaimRepository.readAfterGroup). */
export interface ReconcileReading {
  /** The claim as it is now. */
  current: StoredClaim;
  selectionMethod: boolean;
  partners: PartnerClaims;
}

/** A claim found by Idempotency-Key, with the hash of the request that bound the key (null for keys bound before it was recorded). */
export interface IdempotentClaim {
  claim: StoredClaim;
  requestHash: string | null;
}

const idempotentClaimOf = (row: (ClaimRow & { request_hash: string | null }) | undefined): IdempotentClaim | undefined =>
  row && { claim: new StoredClaim(row), requestHash: row.request_hash };

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

/**
 * The claim as the contract shows it, as JSON text: its JSON columns (checks, reasons and the
 * credential, most of its bytes) are spliced in as stored, not parsed and serialised again.
 * They hold what JSON.stringify wrote when the claim was stored, so the text is the one
 * JSON.stringify would give of the parsed claim, member for member and in the same order.
 */
function claimJsonOf(r: ClaimRow): string {
  const body = JSON.parse(r.body) as NormalisedClaim;
  const head = JSON.stringify({
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
  } satisfies Partial<KptClaim>);
  const tail = JSON.stringify({
    submittedBy: r.submitted_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    ...(r.verified_at ? { verifiedAt: r.verified_at } : {}),
  } satisfies Partial<KptClaim>);
  const credential = r.credential ? `,"credential":${r.credential}` : '';
  const verifiableCredential = r.verifiable_credential ? `,"verifiableCredential":${r.verifiable_credential}` : '';
  return `${head.slice(0, -1)},"checks":${r.checks},"reasons":${r.reasons}${credential}${verifiableCredential},${tail.slice(1)}`;
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

const stored = (row: ClaimRow | undefined): StoredClaim | undefined => row && new StoredClaim(row);

// The statements of every submission, prepared (platform/db/prepared.ts).
const householdClaims = prepared((db: Db, householdDid: string) =>
  db.selectFrom('kpt_claims').select(HOUSEHOLD_COLUMNS).$narrowType<Pick<ClaimRow, 'test_group' | 'status'>>().where('household_did', '=', householdDid).orderBy('seq'),
);

/**
 * findPartnerClaims's statement: whether some claim of the group is there, each test stopping at
 * the first claim that passes it (the collection's index), so a claim costs the same in a large
 * collection as in a small one. ISO dates compare as strings; without a period (null bounds)
 * nothing overlaps. A claim whose credential is revoked or suspended is withdrawn data: it
 * neither makes a control group present nor aligns.
 * A pending claim has no credential, so none of them is withdrawn.
 * Planned once (prepared.ts `planOnce`), like its household read: the group's index and the
 * household's are the only ones these can read by (migration 407).
 */
const partnerClaimsQuery = (db: Db, collectionId: string, group: TestGroup, end: string | null, start: string | null) => {
  const some = (condition: RawBuilder<unknown>) =>
    sql<boolean>`exists (select 1 from kpt_claims c where c.collection_id = ${collectionId} and c.test_group = ${group} and c.status <> 'rejected' and ${condition})`;
  const standing = sql`not (c.credential_revoked or c.credential_suspended)`;
  const overlap = sql`c.start_date <= ${end} and c.end_date >= ${start}`;
  return db.selectNoFrom([
    some(standing).as('present'),
    some(sql`${overlap} and ${standing}`).as('aligned'),
    some(sql`c.status = 'pending' and ${overlap}`).as('aligned_pending'),
  ]);
};
const partnerClaims = prepared(partnerClaimsQuery, { planOnce: 'also alone' });

/** partnerClaims with the household's claims beside them, as a JSON array (PostgreSQL). */
const householdAndPartners = prepared((db: Db, householdDid: string, collectionId: string, group: TestGroup, end: string | null, start: string | null) =>
  partnerClaimsQuery(db, collectionId, group, end, start).select(
    sql<HouseholdClaimRow[]>`(select coalesce(json_agg(h order by h.seq), '[]'::json) from (select seq, ${sql.join(
      HOUSEHOLD_COLUMNS.map((c) => sql.ref(c)),
    )} from kpt_claims where household_did = ${householdDid}) h)`.as('household'),
  ),
  { planOnce: true },
);

/** Every column of claims, with their groups and statuses as the contract types them. */
const claimsIn = (db: Db) => db.selectFrom('kpt_claims').selectAll('kpt_claims').$narrowType<Pick<ClaimRow, 'test_group' | 'status'>>();

/** A claim by its id (its unique key). */
const claimById = prepared((db: Db, id: string) => claimsIn(db).where('id', '=', id), { planOnce: 'also alone', sharesRoundTrip: true });

/** The claim a caller's key is bound to, with the hash of the request that bound it. */
const boundToKey = prepared((db: Db, principalDid: string, key: string) =>
  claimsIn(db)
    .innerJoin('kpt_idempotency_keys as k', 'k.claim_id', 'kpt_claims.id')
    .select('k.request_hash')
    .where('k.principal_did', '=', principalDid)
    .where('k.idempotency_key', '=', key),
  { planOnce: true },
);

/**
 * openSubmission's first statement on PostgreSQL: its locks, in order, then the collection and the
 * household's entity (locked for share). CLAIM_WRITERS comes before the row lock, which gives the
 * transaction its id.
 */
function opening(db: Db, locks: AdvisoryLock[], collectionId: string, householdDid: string) {
  const statement = sql<{ collection: CollectionRow | null; household: EntityRow | null }>`select ${advisoryLockCalls([CLAIM_WRITERS, ...locks])},
       (select row_to_json(c) from kpt_collections c where c.id = ${collectionId}) as collection,
       (select row_to_json(e) from twin_entities e where e.did = ${householdDid} for share) as household`;
  return { compile: () => statement.compile(db) };
}

/** A submission waits for the household's other submissions, and marks its group of the collection in flight. */
const openingOfSubmission = prepared((db: Db, householdLock: string, groupLock: string, collectionId: string, householdDid: string) =>
  opening(db, [{ name: householdLock, mode: 'exclusive' }, { name: groupLock, mode: 'shared' }], collectionId, householdDid),
  { planOnce: true },
);

/** A correction runs alone in its collection: it waits for every submission to either group and every reconcile, and holds new ones back. */
const openingOfCorrection = prepared((db: Db, householdLock: string, referenceLock: string, interventionLock: string, reconcileLock: string, collectionId: string, householdDid: string) =>
  opening(
    db,
    [{ name: householdLock, mode: 'exclusive' }, { name: referenceLock, mode: 'exclusive' }, { name: interventionLock, mode: 'exclusive' }, { name: reconcileLock, mode: 'exclusive' }],
    collectionId,
    householdDid,
  ),
  { planOnce: true },
);

/**
 * updateIfPending's statement on PostgreSQL: every change in one statement, the rows given as one
 * JSON array (serialised natively; array parameters were escaped element by element on the
 * request thread).
 */
const updatePendingClaims = prepared((db: Db, changes: string) => {
  const statement = sql`update kpt_claims k
    set status = v.status, checks = v.checks, reasons = v.reasons, credential = v.credential, verifiable_credential = v.verifiable_credential,
        verified_at = v.verified_at, updated_at = v.updated_at, status_list_index = v.status_list_index
    from json_to_recordset(${changes}::json) as v(id text, status text, checks text, reasons text, credential text, verifiable_credential text,
        verified_at text, updated_at text, status_list_index integer)
    where k.id = v.id and k.status = 'pending'`;
  return { compile: () => statement.compile(db) };
});

const insertClaim = prepared((db: Db, row: NewClaimRow) => db.insertInto('kpt_claims').values(row), { rows: { 0: CLAIM_COLUMNS }, planOnce: true });

/** The claim's evidence and the claim in one statement (PostgreSQL). */
const insertClaimWithEvidence = prepared(
  (db: Db, evidence: EvidenceRow, row: NewClaimRow) =>
    db
      .with('evidence', (q) => q.insertInto('twin_evidence_blobs').values(evidence).onConflict((oc) => oc.column('cid').doNothing()))
      .insertInto('kpt_claims')
      .values(row),
  { rows: { 0: EVIDENCE_COLUMNS, 1: CLAIM_COLUMNS }, planOnce: true },
);

/** Claims, over the database or a transaction (`inTransaction`). */
export class ClaimRepository {
  constructor(private readonly sql: Sql) {}

  private claims() {
    return claimsIn(this.sql);
  }

  async findById(id: string): Promise<StoredClaim | undefined> {
    return stored((await claimById(this.sql, id)).rows[0]);
  }

  /**
   * findById, the row locked until the transaction ends: a transaction changing it (a correction
   * rejecting it, a change of its credential's status) waits for this one, or this read waits for
   * that change.
   */
  async findByIdForUpdate(id: string): Promise<StoredClaim | undefined> {
    return stored(await this.claims().where('id', '=', id).$call(lockRows(this.sql, 'update')).executeTakeFirst());
  }

  async findByClaimKey(claimKey: string): Promise<StoredClaim | undefined> {
    return stored(await this.claims().where('claim_key', '=', claimKey).executeTakeFirst());
  }

  /** The claim a caller's Idempotency-Key is bound to, with the hash of the request it came with. */
  async findByIdempotencyKey(principalDid: string, key: string): Promise<IdempotentClaim | undefined> {
    return idempotentClaimOf((await boundToKey(this.sql, principalDid, key)).rows[0]);
  }

  /**
   * Binds a caller's key to a claim; a key already bound stays as it is (`ifUnbound`: the caller
   * checks). In a submission's transaction the binding goes out with its COMMIT (writeBehind):
   * a key bound meanwhile fails the submission there.
   */
  async bindIdempotencyKey(principalDid: string, key: string, binding: { claimId: string; requestHash: string; at: string }, ifUnbound = false): Promise<void> {
    const insert = this.sql
      .insertInto('kpt_idempotency_keys')
      .values({ principal_did: principalDid, idempotency_key: key, claim_id: binding.claimId, request_hash: binding.requestHash, created_at: binding.at });
    if (ifUnbound) await insert.onConflict((oc) => oc.columns(['principal_did', 'idempotency_key']).doNothing()).execute();
    else await writeBehind(this.sql, insert.compile());
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
   * claim other submissions may re-evaluate: it runs alone in its collection instead. One round
   * trip on PostgreSQL: the reads after the locks are statements of their own, so they see every
   * claim committed while the locks were waited for.
   */
  async openSubmission(s: SubmissionToOpen): Promise<OpenedSubmission> {
    if (dbClientOf(this.sql) !== 'postgres') {
      const { household: householdClaims, partners } = await this.householdAndPartners(s.householdDid, s.collectionId, s.countedGroup, s.period);
      return {
        collection: await findCollection(this.sql, s.collectionId),
        household: householdOf(await findEntityRowForShare(this.sql, s.householdDid)),
        householdClaims,
        partners,
        bound: s.idempotency && (await this.findByIdempotencyKey(s.idempotency.principalDid, s.idempotency.key)),
      };
    }
    const opening = s.correction
      ? openingOfCorrection.query(this.sql, householdLockName(s.householdDid), groupLockName(s.collectionId, 'reference'), groupLockName(s.collectionId, 'intervention'), reconcileLockName(s.collectionId), s.collectionId, s.householdDid)
      : openingOfSubmission.query(this.sql, householdLockName(s.householdDid), groupLockName(s.collectionId, s.group), s.collectionId, s.householdDid);
    const reads = householdAndPartners.query(this.sql, s.householdDid, s.collectionId, s.countedGroup, s.period?.end ?? null, s.period?.start ?? null);
    const [opened, read, bound] = await inOneRoundTrip(this.sql, [opening, reads, ...(s.idempotency ? [boundToKey.query(this.sql, s.idempotency.principalDid, s.idempotency.key)] : [])] as const);
    const { collection, household } = opened.rows[0]!;
    const row = read.rows[0]!;
    return {
      collection: collection ? collectionFromRow(collection) : undefined,
      household: householdOf(household ?? undefined),
      householdClaims: row.household.map(householdClaimOf),
      partners: partnersOf(row),
      bound: idempotentClaimOf(bound?.rows[0]),
    };
  }

  /**
   * What a pending claim's reconcile reads (PostgreSQL), in one round trip and no transaction,
   * shared with the reconciles that start in the same turn (inSharedRoundTrip).
   * First it waits until no submission to `group` of the claim's collection is in flight (their
   * lock, taken in a statement of its own, which lets it go at once): each read after it sees
   * every claim of `group` that counted its partners before the claim committed. It holds
   * nothing, so the reconciles of a group's claims neither wait for each other nor hold up
   * submissions. Then: the claim as it is now, its collection's selection method and the
   * claim's partners in `group`.
   */
  async readAfterGroup(claim: StoredClaim, group: TestGroup): Promise<ReconcileReading> {
    const { collectionId, period } = claim;
    const [, current, collection, partners] = await inSharedRoundTrip(this.sql, [
      advisoryLocks(this.sql, [{ name: groupLockName(collectionId, group), mode: 'exclusive' }]),
      claimById.query(this.sql, claim.id),
      // With the claim's read and its partners': the three go as one transaction planned once.
      alsoAlone(collectionById.query(this.sql, collectionId)),
      partnerClaims.query(this.sql, collectionId, group, period?.end ?? null, period?.start ?? null),
    ] as const);
    return { current: new StoredClaim(current.rows[0]!), selectionMethod: !!collectionFromRow(collection.rows[0]!).selectionMethod, partners: partnersOf(partners.rows[0]!) };
  }

  /**
   * Holds corrections in the collection back until the transaction ends (and waits for one in
   * flight); other reconciles and submissions go on. The lock goes out with the transaction's
   * next statement, before it, in the same round trip.
   */
  async holdCorrectionsBack(collectionId: string): Promise<void> {
    await writeBehind(this.sql, advisoryLocks(this.sql, [{ name: reconcileLockName(collectionId), mode: 'shared' }]));
  }

  /** Every claim of a household, in any collection, with what the conflict rules compare. */
  async findByHousehold(householdDid: string): Promise<HouseholdClaim[]> {
    return (await householdClaims(this.sql, householdDid)).rows.map(householdClaimOf);
  }

  /**
   * Whether a group of a collection holds claims that are not rejected and stand, whether some of
   * them overlap [start, end], and whether some pending ones do (only then must they be
   * re-evaluated).
   */
  async findPartnerClaims(collectionId: string, group: TestGroup, period?: Period): Promise<PartnerClaims> {
    return partnersOf((await partnerClaims(this.sql, collectionId, group, period?.end ?? null, period?.start ?? null)).rows[0]!);
  }

  /**
   * findByHousehold and findPartnerClaims, in one round trip on PostgreSQL (the household's claims
   * as a JSON array beside the partners).
   */
  async householdAndPartners(
    householdDid: string,
    collectionId: string,
    group: TestGroup,
    period?: Period,
  ): Promise<{ household: HouseholdClaim[]; partners: PartnerClaims }> {
    if (dbClientOf(this.sql) !== 'postgres') {
      return { household: await this.findByHousehold(householdDid), partners: await this.findPartnerClaims(collectionId, group, period) };
    }
    const row = (await householdAndPartners(this.sql, householdDid, collectionId, group, period?.end ?? null, period?.start ?? null)).rows[0]!;
    return { household: row.household.map(householdClaimOf), partners: partnersOf(row) };
  }

  /** Pending claims of a group in a collection whose test period overlaps [start, end], in `seq` order. */
  async findPendingOverlapping(collectionId: string, group: TestGroup, period: Period): Promise<StoredClaim[]> {
    const rows = await this.pendingOverlapping(collectionId, group, period).execute();
    return rows.map((r) => new StoredClaim(r));
  }

  /**
   * findPendingOverlapping, the rows locked for update in `seq` order (lockRows): a transaction
   * that locked them first is waited for, and the claims it changed are no longer pending here.
   */
  async lockPendingOverlapping(collectionId: string, group: TestGroup, period: Period): Promise<StoredClaim[]> {
    const rows = await this.pendingOverlapping(collectionId, group, period).$call(lockRows(this.sql, 'update')).execute();
    return rows.map((r) => new StoredClaim(r));
  }

  private pendingOverlapping(collectionId: string, group: TestGroup, period: Period) {
    return this.claims()
      .where('collection_id', '=', collectionId)
      .where('test_group', '=', group)
      .where('status', '=', 'pending')
      .where('start_date', '<=', period.end)
      .where('end_date', '>=', period.start)
      .orderBy('seq');
  }

  /**
   * Inserts a claim with its evidence (stored under its CID). It waits for no other insert: on
   * PostgreSQL its row records its transaction, which is how followers page (commitOrder in
   * claim-order.ts), and both go in one statement that leaves with the transaction's next
   * statement or its COMMIT (writeBehind): a claim stored meanwhile under the same key fails the
   * unit of work there. The claim as stored.
   */
  async insertWithEvidence(evidence: EvidenceRow, claim: NewClaim): Promise<StoredClaim> {
    const row = claimRowOf(claim);
    if (dbClientOf(this.sql) === 'postgres') {
      await writeBehind(this.sql, insertClaimWithEvidence.query(this.sql, evidence, row));
    } else {
      await insertEvidence(this.sql, evidence);
      await insertClaim(this.sql, row);
    }
    return inserted(row);
  }

  /** Frees a rejected claim's key for its corrected resubmission. */
  async releaseClaimKey(id: string, replacementKey: string): Promise<void> {
    await this.sql.updateTable('kpt_claims').set({ claim_key: replacementKey }).where('id', '=', id).execute();
  }

  async update(id: string, change: ClaimChange): Promise<void> {
    await this.sql.updateTable('kpt_claims').set(claimUpdateOf(change)).where('id', '=', id).execute();
  }

  /**
   * Updates claims only while they are still pending, in one statement on PostgreSQL (a claim
   * completing 2,000 pending claims: 1.1-1.3 s instead of 1.8 s with an UPDATE each, and the
   * request thread held at most 85-124 ms instead of 244-273 ms). Of two transactions
   * re-evaluating one claim at once, the later waits for the earlier and then changes nothing.
   */
  async updateIfPending(changes: readonly PendingClaimChange[]): Promise<void> {
    if (!changes.length) return;
    const rows = changes.map(({ id, change }) => ({ id, ...claimUpdateOf(change), status_list_index: change.statusListIndex }));
    if (dbClientOf(this.sql) === 'postgres') {
      await updatePendingClaims(this.sql, JSON.stringify(rows));
      return;
    }
    for (const { id, ...update } of rows) await this.sql.updateTable('kpt_claims').set(update).where('id', '=', id).where('status', '=', 'pending').execute();
  }

  /** One page (and one row more, to tell whether another follows) of the claims a filter matches. */
  async list(f: ClaimFilter): Promise<StoredClaim[]> {
    const order = commitOrder(dbClientOf(this.sql), 'kpt_claims');
    const rows = await this.claims()
      .$if(order.horizon !== undefined, (q) => q.where(order.horizon!))
      .$if(!!f.collection, (q) => q.where('collection_id', '=', f.collection!))
      .$if(!!f.household, (q) => q.where('household_did', '=', f.household!))
      .$if(!!f.group, (q) => q.where('test_group', '=', f.group!))
      .$if(!!f.status, (q) => q.where('status', '=', f.status!))
      .$if(f.afterSeq !== undefined, (q) => q.where(order.relativeTo('>', f.afterSeq!)))
      .orderBy(order.orderBy('asc'))
      .limit(f.limit + 1)
      .execute();
    if (await missingAnchor(this.sql, order, f.afterSeq)) throw cursorNotIssued();
    return rows.map((r) => new StoredClaim(r));
  }

  /**
   * How many claims there are in each status (the metrics' gauge), every status of the contract
   * included: a status without claims is 0, not a series that vanishes (alerts on absent() or
   * rate() would misread it).
   */
  async countByStatus(): Promise<{ status: ClaimStatus; count: number }[]> {
    const rows = await this.sql
      .selectFrom('kpt_claims')
      .select((eb) => ['status', eb.fn.countAll().as('count')])
      .groupBy('status')
      .$narrowType<Pick<ClaimRow, 'status'>>()
      .execute();
    const counts = new Map(rows.map((r) => [r.status, Number(r.count)]));
    return CLAIM_STATUSES.map((status) => ({ status, count: counts.get(status) ?? 0 }));
  }

  /**
   * Verified claims of a collection, as the campaign report reads them: those whose credential
   * stands, and how many others it leaves out because their credential is revoked or suspended.
   */
  async findVerifiedInCollection(collectionId: string): Promise<{ counted: ReportClaim[]; withdrawn: number }> {
    const rows = await this.sql
      .selectFrom('kpt_claims')
      .select(['household_did', 'test_group', 'days', 'total_kg', 'credential_revoked', 'credential_suspended'])
      .$narrowType<Pick<ClaimRow, 'test_group'>>()
      .where('collection_id', '=', collectionId)
      .where('status', '=', 'verified')
      .orderBy('seq')
      .execute();
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
