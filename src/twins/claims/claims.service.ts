// KPT claims: request checks (400 / 409), storage, the eight validation rules, pending ->
// verified transitions and credential issuance, in one transaction per submission, and a short
// reconcile after it for a claim left pending. A submission is a sequence of
// steps (prepare; admit and store in one transaction; the answer after it) that the use case
// owning the unit of work runs: `submit` for POST /v1/claims, or a caller's use case storing its
// own writes with the claim in the same transaction.
import { hash, randomUUID } from 'node:crypto';
import { isUniqueViolation, type Db } from '../../platform/db/index.ts';
import { inTransaction, type Sql } from '../../platform/db/sql.ts';
import { conflictWith, forbiddenAction, invalidInput, refusedInput, type InputIssue } from '../../platform/domain-errors.ts';
import type { Principal } from '../../platform/keys/service.ts';
import { setBounded } from '../../platform/bounded-map.ts';
import type {
  ClaimStatus,
  Collection,
  KptClaim,
  KptClaimPage,
  KptClaimRequest,
  ListClaimsData,
} from '../../../generated/openapi/types.gen.ts';
import { DEFAULT_COLLECTION_ID, maySubmitInto } from './collections.ts';
import { ClaimRepository, findClaimById, type HouseholdClaim, type IdempotentClaim, type PartnerClaims, type PendingClaimChange, type StoredClaim } from './claims.repository.ts';
import { findCollection } from './collections.repository.ts';
import type { ClaimSeal, CredentialInput, NormalisedClaim, SealedCredential } from './claim-seal.ts';
import type { ClaimSealer } from './claim-sealer.ts';
import type { CredentialStatusService } from '../credentials/credential-status.service.ts';
import { jcs } from '../credentials/credentials.ts';
import { CREATED_STATUS, idempotencyKeyReused, requestHash } from '../idempotency.ts';
import { evidenceAddressIssues, evidenceRow } from './evidence.ts';
import type { PublicBase } from '../credentials/kpt-context.ts';
import { canBeVerified, evaluateKptRules, measurementConflicts, otherGroup, periodsOverlap, type RuleContext } from './kpt-rules.ts';
import { selectionOf, type SelectionStatement, type SelectionVerdict } from './selection.ts';
import { decodeCursor, pageOf } from '../paging.ts';
import { claimEvent, newClaimEvents } from '../events/events.ts';
import { collectionOwner, recordEvents } from '../events/events.repository.ts';
import { assertMatchesSchema } from '../schemas.ts';

/** The query of GET /v1/claims, as the contract states it. */
export type ClaimListFilter = NonNullable<ListClaimsData['query']>;

export interface SubmitResult {
  /** false for an identical resubmission or a repeated Idempotency-Key: `claim` is the stored one. */
  created: boolean;
  /** The claim as stored; its contract view is toKptClaim(), or toJson() as text. */
  claim: StoredClaim;
  /** A retry with the caller's Idempotency-Key: what the first request with it was answered (its status and JSON body), which answers the retry. */
  replayed?: { status: number; json: string };
}

export interface SubmitOptions {
  idempotencyKey?: string;
}

export interface ClaimServiceOptions {
  totalToleranceKg: number;
  sealer: ClaimSealer;
  /** The public base URL credentials name their context, status lists and evidence under. */
  base: PublicBase;
  statuses: CredentialStatusService;
}

const sha256hex = (s: string) => hash('sha256', s, 'hex');
// 122 random bits as 32 hex digits. randomUUID draws from a buffered pool; randomBytes(16) would
// ask the system each time.
const newClaimId = () => `kpt_${randomUUID().replaceAll('-', '')}`;

/** The claim as a canonical request: defaults filled in, so equal claims compare equal. */
function normalise(body: KptClaimRequest): NormalisedClaim {
  return {
    ...body,
    collectionId: body.collectionId ?? DEFAULT_COLLECTION_ID,
    fuelMeasurements: { ...body.fuelMeasurements, unit: body.fuelMeasurements.unit ?? 'kg' },
  };
}

/** Identity of a measurement: the same household, group, period and logs in one collection. */
function claimKeyOf(b: NormalisedClaim): string {
  return sha256hex(
    jcs({
      collectionId: b.collectionId,
      householdId: b.householdId,
      testGroup: b.testGroup,
      testPeriod: b.testPeriod ? { startDate: b.testPeriod.startDate, endDate: b.testPeriod.endDate } : null,
      dailyLogs: b.fuelMeasurements.dailyLogs,
    }),
  );
}

/** Whether two claims logged the same fuel each day. */
const sameLogs = (a: number[], b: number[]) => a.length === b.length && a.every((kg, i) => kg === b[i]);

const periodOf = (b: KptClaimRequest) => (b.testPeriod ? { start: b.testPeriod.startDate, end: b.testPeriod.endDate } : undefined);

/** A caller's Idempotency-Key and the hash of the whole (normalised) request sent with it. */
interface Idempotency {
  key: string;
  requestHash: string;
}

/**
 * Whether a claim bound to a key was bound by this same request. Keys bound before request
 * hashes were recorded fall back to the claim's measurement key.
 */
const isSameRequest = (bound: IdempotentClaim, idempotency: Idempotency, claimKey: string) =>
  bound.requestHash !== null ? bound.requestHash === idempotency.requestHash : bound.claim.claimKey === claimKey;

/**
 * A submission checked against the contract and sealed, before any transaction: what a unit of
 * work submitting it takes (`admit`, then `store`, in one transaction; the steps after it).
 */
export interface ClaimSubmission {
  /** The id the claim is stored under if it is new. */
  readonly id: string;
  readonly principal: Principal;
  readonly claim: NormalisedClaim;
  readonly claimKey: string;
  readonly at: string;
  readonly conflicts: InputIssue[];
  readonly seal: ClaimSeal | undefined;
  /** What the credential signed ahead (if any) states of the household's selection. */
  readonly selection: SelectionStatement | undefined;
  readonly statusIndex: number | undefined;
  readonly idempotency: Idempotency | undefined;
}

/** What `admit` found: what `store` goes on with. */
export interface AdmittedClaim {
  collection: Collection;
  selection: SelectionVerdict;
  partners: PartnerClaims;
}

/**
 * What `admit` decides: a claim stored before answers the submission (nothing is to be written;
 * `keyBound` when the caller's Idempotency-Key was bound to it before), or `store` follows.
 */
export type Admission = { replay: StoredClaim; keyBound?: IdempotentClaim } | { admitted: AdmittedClaim };

/** What answers a submission that stored nothing: the claim stored before, or the answer kept with the caller's Idempotency-Key. */
type Replay = { claim: StoredClaim } | { bound: IdempotentClaim };

/** An identical resubmission is answered with the claim stored before, as 200 (a new claim is 201). */
const STORED_BEFORE_STATUS = 200;

/** What the rules need of the other group's claims. */
type Partners = Pick<PartnerClaims, 'present' | 'aligned'>;

/** The rules' context, with rule 5's verdict whole (its statement goes into a credential). */
type ClaimContext = RuleContext & { selection: SelectionVerdict };

const ruleContext = (selection: SelectionVerdict, partners: Partners): ClaimContext => ({
  selection,
  otherGroupPresent: partners.present,
  otherGroupAligned: partners.aligned,
});

/** Whether a credential signed ahead states the selection the transaction found. */
const sameSelection = (a: SelectionStatement | undefined, b: SelectionVerdict) => b.passed && a !== undefined && jcs(a) === jcs(b.statement);

/** How many collections' groups ClaimService.partnersSeen remembers. */
const PARTNERS_SEEN_MAX = 10_000;
/** How many collections ClaimService.collectionsSeen remembers. */
const COLLECTIONS_SEEN_MAX = 1_000;
const groupOf = (claim: NormalisedClaim) => `${claim.collectionId}\n${claim.testGroup}`;

export class ClaimService {
  /** Reads and writes outside a submission's transaction. */
  private readonly repo: ClaimRepository;
  /**
   * By collection and group: whether the other group held a claim that counts (rule 6) when a
   * submission last looked (`store`). A claim whose group had none is expected to end pending,
   * as a programme's first claims do: its credential is not signed ahead (`prepare`); if it ends
   * verified after all, `store` signs it in the transaction.
   */
  private readonly partnersSeen = new Map<string, boolean>();
  /**
   * By id: each collection as a submission's transaction last read it (`admit`). `prepare`
   * signs ahead by it instead of reading it again: a collection's selection design never
   * changes, and should who may submit into it have changed meanwhile, `store` signs anew when
   * the selection it finds differs.
   */
  private readonly collectionsSeen = new Map<string, Collection>();

  constructor(
    private readonly db: Db,
    private readonly opts: ClaimServiceOptions,
  ) {
    this.repo = new ClaimRepository(db);
  }

  /**
   * Validates, stores and verifies a KPT claim: its own unit of work (prepare, then admit and
   * store in one transaction, then the answer after the commit). Throws DomainError: invalid
   * (not a KPT claim), forbidden (the household is a registered entity the caller does not
   * control), conflict (conflicting data) or unprocessable (an Idempotency-Key reused for another
   * claim). A use case storing its own writes with the claim runs the same steps itself.
   */
  async submit(principal: Principal, body: KptClaimRequest, opts: SubmitOptions = {}): Promise<SubmitResult> {
    const submission = await this.prepare(principal, body, opts);
    let replay: Replay;
    const unitOfWork = async (sql: Sql) => {
      const admission = await this.admit(sql, submission);
      return 'replay' in admission ? admission : { stored: await this.store(sql, submission, admission.admitted) };
    };
    try {
      const outcome = await inTransaction(this.db, unitOfWork);
      if ('stored' in outcome) return await this.keepAnswer(submission, await this.answer(outcome.stored, true), outcome.stored.toJson());
      replay = outcome.keyBound ? { bound: outcome.keyBound } : { claim: await this.replaying(submission, outcome.replay) };
    } catch (err) {
      replay = await this.recovered(submission, err);
    }
    if ('bound' in replay) return this.replayAnswer(replay.bound);
    return this.keepAnswer(submission, await this.answer(replay.claim, false));
  }

  /**
   * The answer of a submission with an Idempotency-Key, kept with the key for its retries: the
   * claim's body as answered after its reconcile, unless it is the one bound with the key
   * (`boundBody`). Kept after the commit, so a retry in between replays the body bound, if any.
   */
  private async keepAnswer(submission: ClaimSubmission, result: SubmitResult, boundBody?: string): Promise<SubmitResult> {
    const json = result.claim.toJson();
    if (submission.idempotency && json !== boundBody) await this.repo.keepIdempotentAnswer(submission.principal.did, submission.idempotency.key, result.claim.id, json);
    return result;
  }

  /** A retry with an Idempotency-Key: the first answer again; a key bound before answers were kept answers its claim as it is now, with the status kept or (keys from before statuses were) as created. */
  private async replayAnswer(bound: IdempotentClaim): Promise<SubmitResult> {
    const claim = bound.responseBody === null ? (await this.answer(bound.claim, false)).claim : bound.claim;
    return { created: false, claim, replayed: { status: bound.responseStatus ?? CREATED_STATUS, json: bound.responseBody ?? claim.toJson() } };
  }

  /** Checks the claim against the contract and seals it, before any transaction. Throws DomainError (invalid). */
  async prepare(principal: Principal, body: KptClaimRequest, opts: SubmitOptions = {}): Promise<ClaimSubmission> {
    assertMatchesSchema<KptClaimRequest>('KptClaimRequest', body, 'KPT claim');
    const addressIssues = evidenceAddressIssues(body.evidence);
    if (addressIssues.length) throw invalidInput('The body is not a valid KPT claim', addressIssues);

    const claim = normalise(body);
    const claimKey = claimKeyOf(claim);
    const idempotency = opts.idempotencyKey ? { key: opts.idempotencyKey, requestHash: requestHash(claim) } : undefined;
    // Known now, but reported in the transaction after its 400 and 403: a conflict is only worth
    // telling a caller who may submit the claim at all. A conflicting claim is never sealed.
    const conflicts = measurementConflicts(claim, this.opts.totalToleranceKg);
    // Sealed before the transaction, on the sealer thread, so the transaction only decides and
    // stores; the credential is signed whenever the claim could turn out verified and is not
    // expected to end pending (partnersSeen).
    const id = newClaimId();
    const at = new Date().toISOString();
    const verifiable = !conflicts.length && canBeVerified(claim);
    // Kept by a claim left pending too, for the credential signed when it is verified later.
    const statusIndex = verifiable ? await this.opts.statuses.nextIndex() : undefined;
    // The household's selection, read outside the transaction for the credential signed ahead;
    // the transaction reads it again and signs anew should it have changed meanwhile (a draw
    // revealed or replaced).
    const collection = verifiable ? this.collectionsSeen.get(claim.collectionId) ?? (await findCollection(this.db, claim.collectionId)) : undefined;
    const verdict = collection && (await selectionOf(this.db, collection, claim.householdId));
    const selection = verdict?.passed ? verdict.statement : undefined;
    const withCredential = verifiable && selection !== undefined && this.partnersSeen.get(groupOf(claim)) !== false;
    const seal = conflicts.length
      ? undefined
      : await this.opts.sealer.seal({ id, claim, submittedBy: principal.did, at, withCredential, selection, issuance: { base: this.opts.base, statusIndex } });
    return { id, principal, claim, claimKey, at, conflicts, seal, selection, statusIndex, idempotency };
  }

  /**
   * After the transaction that admitted a replay (`admit`) committed: a key first sent with a
   * request that found its claim already stored is bound to that claim too (outside the
   * transaction), so reusing it for another body is refused later. The claim that answers.
   */
  async replaying(submission: ClaimSubmission, replay: StoredClaim): Promise<StoredClaim> {
    if (submission.idempotency) await this.bindReplayedKey(submission.principal, submission.idempotency, replay, submission.claimKey);
    return replay;
  }

  /**
   * After the submission's unit of work failed with `err`: when a concurrent submission with the
   * same key, or of the same claim, committed first, the claim it stored answers (as a replay);
   * otherwise `err` is thrown.
   */
  async recover(submission: ClaimSubmission, err: unknown): Promise<StoredClaim> {
    const replay = await this.recovered(submission, err);
    return 'bound' in replay ? replay.bound.claim : replay.claim;
  }

  /** recover, telling a claim bound to the caller's key (whose kept answer answers) from one stored by an identical submission. */
  private async recovered(submission: ClaimSubmission, err: unknown): Promise<Replay> {
    const { principal, idempotency, claimKey } = submission;
    if (isUniqueViolation(err)) {
      const bound = idempotency && (await this.repo.findByIdempotencyKey(principal.did, idempotency.key));
      if (bound) {
        if (isSameRequest(bound, idempotency, claimKey)) return { bound };
        throw idempotencyKeyReused(idempotency.key, 'claim');
      }
      const winner = await this.repo.findByClaimKey(claimKey);
      if (winner) return { claim: await this.replaying(submission, winner) };
    }
    throw err;
  }

  /**
   * The answer, after the commit: the claim stored (`created`), or the one stored before that
   * answers the submission (after the caller's writes for it). A retry after a failed reconcile
   * runs it again.
   */
  async answer(claim: StoredClaim, created: boolean): Promise<SubmitResult> {
    return { created, claim: await this.reconciled(claim) };
  }

  /**
   * A claim left pending may have missed an aligned claim of the other group that
   * counted its partners before this one committed (each saw the other uncommitted: write
   * skew). Once committed, a pending claim waits here until no submission to the other group of
   * its collection is in flight, then counts its partners again (readAfterGroup). Of a reference
   * and an intervention claim, either the later count saw the earlier claim committed (and
   * re-evaluated it in its own transaction), or the earlier claim ended pending and its
   * reconcile waited for the later one to commit and sees it. A submission that starts after the
   * wait sees this claim committed. Most claims still find no partner: those reads, with no
   * transaction, are their whole reconcile. Otherwise a transaction re-evaluates the claim
   * and the pending overlapping claims of the other group. Claims of one group never wait for
   * each other, nor do reconciles: they change only pending claims, in `seq` order, each change
   * applied if the claim is still pending. A correction, which changes a claim it read, waits for
   * them. (SQLite runs one writing transaction at a time, so there each count already saw every
   * earlier claim: readAfterGroup reads nothing.) The claim as it is after the reconcile.
   */
  private async reconciled(claim: StoredClaim): Promise<StoredClaim> {
    if (claim.status !== 'pending') return claim;
    const seen = await this.repo.readAfterGroup(claim, otherGroup(claim.testGroup));
    if (!seen) return claim;
    if (seen.current.status !== 'pending') return seen.current;
    const selection = await selectionOf(this.db, seen.collection, claim.householdId);
    if (!seen.partners.alignedPending && evaluateKptRules(seen.current.request, ruleContext(selection, seen.partners)).status === 'pending') return seen.current;
    // Something is to change: under the lock corrections wait for, everything is read again.
    return inTransaction(this.db, async (sql) => {
      const claims = new ClaimRepository(sql);
      await claims.holdCorrectionsBack(claim.collectionId);
      const now = new Date().toISOString();
      const current = (await claims.findById(claim.id))!;
      if (current.status !== 'pending') return current;
      const collection = (await findCollection(sql, claim.collectionId))!;
      const partners = current.period ? await claims.findPendingOverlapping(current.collectionId, otherGroup(current.testGroup), current.period) : [];
      // In `seq` order, as every transaction changing pending claims does: none waits for another in a cycle.
      for (const waiting of [current, ...partners].sort((a, b) => a.seq - b.seq)) await this.reevaluate(sql, waiting, collection, now);
      return (await claims.findById(claim.id))!;
    });
  }

  /**
   * The submission's first step in the caller's transaction (before anything else, on
   * PostgreSQL: its locks come first): its checks, and whether a claim stored before answers it.
   * Throws DomainError: invalid, forbidden, conflict or unprocessable (see submit).
   */
  async admit(sql: Sql, submission: ClaimSubmission): Promise<Admission> {
    const { principal, id, at: now, claim, claimKey, conflicts, seal, idempotency } = submission;
    const claims = new ClaimRepository(sql);
    const period = periodOf(claim);
    // The collection is read unlocked: it is never deleted, and only who may submit into it
    // changes (a submission in flight keeps the access it read). The household
    // entity is locked for share: a controller transfer in flight is waited for, and none starts
    // until this commits. READ COMMITTED: the claims are read after the locks, and see every
    // claim committed before, here every earlier claim of the household (openSubmission's lock)
    // and of the other group of the collection but those in flight. If this claim ends pending
    // for one of those, the reconcile after the commit catches up (`reconciled`); if it is
    // verified, that one's count or its reconcile sees it.
    const opened = await claims.openSubmission({
      householdDid: claim.householdId,
      collectionId: claim.collectionId,
      group: claim.testGroup,
      countedGroup: otherGroup(claim.testGroup),
      period,
      correction: !!claim.corrects,
      idempotency: idempotency && { principalDid: principal.did, key: idempotency.key },
    });
    const { collection, household } = opened;
    if (!collection) {
      throw refusedInput(`No collection ${claim.collectionId}.`, [
        { path: ['collectionId'], message: `names no collection (create it with POST /v1/collections)`, rule: 'collection-exists' },
      ]);
    }
    setBounded(this.collectionsSeen, collection.id, collection, COLLECTIONS_SEEN_MAX);
    if (!maySubmitInto(collection, principal.did)) {
      throw forbiddenAction(`Collection ${collection.id} takes claims from its creator and its submitters only; ${principal.did} is neither.`);
    }
    if (household && household.controller !== principal.did) {
      throw forbiddenAction(`${claim.householdId} is a registered entity controlled by ${household.controller}; only its controller may submit claims for it.`);
    }
    if (conflicts.length || !seal) throw conflictWith(`The measurement data conflict: ${conflicts.map((c) => c.message).join('; ')}`, conflicts, 'conflicting-measurements');
    if (idempotency && opened.bound) {
      if (isSameRequest(opened.bound, idempotency, claimKey)) return { replay: opened.bound.claim, keyBound: opened.bound };
      throw idempotencyKeyReused(idempotency.key, 'claim');
    }
    let { householdClaims, partners } = opened;
    // The claim being corrected may hold the same measurements: it is superseded, not replayed.
    const identical = householdClaims.find((c) => c.claimKey === claimKey && c.id !== claim.corrects);
    // A rejected claim may be corrected (same measurements, more documentation): the new claim
    // takes over its key and the rejected one stays on record.
    let superseded: string | undefined;
    if (identical) {
      const stored = (await claims.findById(identical.id))!;
      if (stored.status !== 'rejected' || jcs(stored.request) === jcs(claim)) return { replay: stored };
      superseded = stored.id;
    }
    if (claim.corrects) {
      await this.supersede(sql, principal, claim, id, now);
      // The corrected claim no longer counts against this one, nor as its partner (it may be of the other group).
      ({ household: householdClaims, partners } = await claims.householdAndPartners(claim.householdId, claim.collectionId, otherGroup(claim.testGroup), period));
    }
    this.assertNoHouseholdConflict(householdClaims, claim);
    // Every refusal above comes before this first write of a submission that corrects nothing.
    if (superseded) await claims.releaseClaimKey(superseded, sha256hex(`superseded:${superseded}`));
    return { admitted: { collection, selection: await selectionOf(sql, collection, claim.householdId), partners } };
  }

  /**
   * The submission's second step, in the transaction `admit` admitted it in (and after the
   * caller's writes for the claim, if any): evaluates, stores and verifies the claim, and
   * re-evaluates the pending claims it completes.
   */
  async store(sql: Sql, submission: ClaimSubmission, { collection, selection, partners }: AdmittedClaim): Promise<StoredClaim> {
    const { principal, id, at: now, claim, claimKey, seal, statusIndex, idempotency } = submission;
    // admit refuses a conflicting claim, the one kind that is not sealed.
    if (!seal) throw new Error(`claim ${id} reached store without a seal`);
    const claims = new ClaimRepository(sql);
    const period = periodOf(claim);
    const outcome = evaluateKptRules(claim, ruleContext(selection, partners));
    setBounded(this.partnersSeen, groupOf(claim), partners.present, PARTNERS_SEEN_MAX);
    // canBeVerified(claim) held for a verified claim, so it has a status index; its credential
    // was signed ahead unless the claim was expected to end pending (partnersSeen) or its
    // selection read then differs from the transaction's.
    const credential =
      outcome.status === 'verified' && selection.passed
        ? seal.credential && sameSelection(submission.selection, selection)
          ? seal.credential
          : await this.signCredential({ claimId: id, claimCid: seal.claimCid, body: claim, now, selection: selection.statement }, statusIndex)
        : undefined;
    const stored = await claims.insertWithEvidence(evidenceRow(seal.claimCid, seal.canonical), {
      id,
      claimKey,
      request: claim,
      status: outcome.status,
      checks: outcome.checks,
      reasons: outcome.reasons,
      claimCid: seal.claimCid,
      submittedBy: principal.did,
      at: now,
      ...(credential ? { credential } : {}),
      // Kept while pending, for the credential signed when the claim is verified later.
      statusListIndex: outcome.status === 'rejected' ? null : statusIndex ?? null,
    });
    // The answer is kept with the key: a retry gets it, not the claim as it is by then.
    if (idempotency) await claims.bindIdempotencyKey(principal.did, idempotency.key, { claimId: id, requestHash: idempotency.requestHash, responseStatus: CREATED_STATUS, responseBody: stored.toJson(), at: now });
    await recordEvents(sql, newClaimEvents(stored, collection.createdBy), now);

    if (outcome.status !== 'rejected' && period && partners.alignedPending) await this.complete(sql, claim, period, collection, now);
    return stored;
  }

  /**
   * The pending claims of the other group that `claim` (just stored, not rejected) overlaps: it
   * is their aligned partner, so they are re-evaluated without reading their partners. They are
   * locked first, so a submission of another transaction completing them too waits for this one
   * and then finds them no longer pending, instead of signing each again.
   */
  private async complete(sql: Sql, claim: NormalisedClaim, period: { start: string; end: string }, collection: Collection, now: string): Promise<void> {
    const claims = new ClaimRepository(sql);
    const waiting = await claims.lockPendingOverlapping(claim.collectionId, otherGroup(claim.testGroup), period);
    // One at a time: a transaction's statements share one connection, which runs one at a time.
    const changes: PendingClaimChange[] = [];
    for (const c of waiting) {
      const change = await this.verdictChange(sql, c, ruleContext(await selectionOf(sql, collection, c.householdId), { present: true, aligned: true }), now);
      if (change) changes.push(change);
    }
    await this.recordVerdicts(sql, waiting, await claims.updateIfPending(changes), collection, now);
  }

  /** The events of pending claims whose verdict changed (`applied`, of `claims`). */
  private async recordVerdicts(sql: Sql, claims: readonly StoredClaim[], applied: readonly PendingClaimChange[], collection: Collection, now: string): Promise<void> {
    const events = applied.map(({ id, change }) => claimEvent('status', { ...claims.find((c) => c.id === id)!, status: change.status }, collection.createdBy));
    await recordEvents(sql, events.filter((e) => e !== undefined), now);
  }

  /**
   * A key first sent with a request that found its claim already stored is bound to that claim
   * too (outside the rolled-back transaction), so reusing it for another body is refused later.
   */
  private async bindReplayedKey(principal: Principal, idempotency: Idempotency, claim: StoredClaim, claimKey: string): Promise<void> {
    await this.repo.bindIdempotencyKey(principal.did, idempotency.key, { claimId: claim.id, requestHash: idempotency.requestHash, responseStatus: STORED_BEFORE_STATUS, at: new Date().toISOString() }, true);
    const bound = await this.repo.findByIdempotencyKey(principal.did, idempotency.key);
    if (bound && !isSameRequest(bound, idempotency, claimKey)) throw idempotencyKeyReused(idempotency.key, 'claim');
  }

  /** The credential of a claim found verified after it was sealed, signed on the sealer thread with its index in the status lists. */
  private signCredential(claim: Omit<CredentialInput, 'issuance'>, statusIndex: number | undefined): Promise<SealedCredential> {
    return this.opts.sealer.sealCredential({ ...claim, issuance: { base: this.opts.base, statusIndex } });
  }

  /** Re-runs the rules for a pending claim; stores the new status (and credential when verified). */
  private async reevaluate(sql: Sql, stored: StoredClaim, collection: Collection, now: string): Promise<void> {
    const claims = new ClaimRepository(sql);
    const partners = await claims.findPartnerClaims(stored.collectionId, otherGroup(stored.testGroup), periodOf(stored.request));
    const change = await this.verdictChange(sql, stored, ruleContext(await selectionOf(sql, collection, stored.householdId), partners), now);
    if (change) await this.recordVerdicts(sql, [stored], await claims.updateIfPending([change]), collection, now);
  }

  /** A pending claim's change under the rules in `context` (with its credential when verified); none if its status stays. */
  private async verdictChange(sql: Sql, stored: StoredClaim, context: ClaimContext, now: string): Promise<PendingClaimChange | undefined> {
    const body = stored.request;
    const outcome = evaluateKptRules(body, context);
    if (outcome.status === stored.status) return undefined;
    // A claim left pending before status lists existed gets its index now.
    const statusIndex = outcome.status === 'verified' ? stored.statusListIndex ?? (await this.opts.statuses.indexIn(sql)) : stored.statusListIndex;
    return {
      id: stored.id,
      change: {
        status: outcome.status,
        checks: outcome.checks,
        reasons: outcome.reasons,
        credential:
          outcome.status === 'verified' && context.selection.passed
            ? await this.signCredential({ claimId: stored.id, claimCid: stored.claimCid, body, now, selection: context.selection.statement }, statusIndex!)
            : undefined,
        updatedAt: now,
        statusListIndex: statusIndex,
      },
    };
  }

  /**
   * A claim found wrong after it was checked, corrected by claim `by`: it becomes rejected
   * (reason `corrected`), frees its measurement key, and its credential is revoked.
   */
  private async supersede(sql: Sql, principal: Principal, claim: NormalisedClaim, by: string, now: string): Promise<void> {
    const claims = new ClaimRepository(sql);
    // Nothing else changes claims of the collection meanwhile (openSubmission's locks for a correction).
    const original = await claims.findById(claim.corrects!);
    const refuse = (message: string) => invalidInput('The body is not a valid KPT claim', [{ path: ['corrects'], message, rule: 'correction-target' }]);
    if (!original) throw refuse(`names no claim (${claim.corrects})`);
    if (original.householdId !== claim.householdId || original.collectionId !== claim.collectionId) {
      throw refuse(`names claim ${original.id} of another household or collection (${original.householdId}, ${original.collectionId})`);
    }
    if (original.submittedBy !== principal.did) throw forbiddenAction(`Claim ${original.id} was submitted by ${original.submittedBy}; only its submitter may correct it.`);
    if (original.status === 'rejected') {
      throw conflictWith(`Claim ${original.id} is already rejected; submit the new claim without corrects.`, [
        { path: ['corrects'], message: `names claim ${original.id}, which is already rejected`, rule: 'correction-target-rejected' },
      ], 'correction-target-rejected');
    }
    const reason = `corrected by claim ${by}`;
    const credential = original.credential;
    await claims.update(original.id, {
      status: 'rejected',
      checks: original.checks,
      reasons: [{ rule: 'corrected', message: `Found wrong after it was checked: ${reason}.` }],
      credential,
      updatedAt: now,
    });
    await claims.releaseClaimKey(original.id, sha256hex(`superseded:${original.id}`));
    await recordEvents(sql, [claimEvent('status', { ...original, status: 'rejected' }, await collectionOwner(sql, original.collectionId))!], now);
    if (credential && original.statusListIndex !== null) {
      await this.opts.statuses.revokeIn(sql, { did: principal.did, keyId: principal.keyId }, original.id, reason);
    }
  }

  /** 409 when the household is in the other group of this collection, or an overlapping claim says otherwise. */
  private assertNoHouseholdConflict(existing: HouseholdClaim[], claim: NormalisedClaim): void {
    const errors: InputIssue[] = [];
    // A rejected claim does not place the household in a group: a wrong group can be corrected.
    const otherGroupClaim = existing.find(
      (c) => c.collectionId === claim.collectionId && c.testGroup !== claim.testGroup && c.status !== 'rejected',
    );
    if (otherGroupClaim) {
      errors.push({
        path: ['testGroup'],
        message: `household ${claim.householdId} is already in the ${otherGroupClaim.testGroup} group of collection ${claim.collectionId} (claim ${otherGroupClaim.id})`,
        rule: 'household-single-group',
      });
    }
    const period = periodOf(claim);
    const logs = claim.fuelMeasurements.dailyLogs;
    const overlapping = period
      ? existing.find(
          (c) => c.status !== 'rejected' && c.period && periodsOverlap(period, c.period) &&
            !(c.period.start === period.start && c.period.end === period.end && sameLogs(c.dailyLogs, logs)),
        )
      : undefined;
    if (overlapping) {
      errors.push({
        path: ['testPeriod'],
        message: `claim ${overlapping.id} already covers ${overlapping.period!.start}..${overlapping.period!.end} for this household with other measurements`,
        rule: 'no-overlapping-claim',
      });
    }
    if (errors.length) throw conflictWith(`The measurement data conflict: ${errors.map((e) => e.message).join('; ')}`, errors, 'conflicting-measurements');
  }

  get(id: string): Promise<KptClaim | undefined> {
    return findClaimById(this.db, id);
  }

  /** get's claim as JSON text (StoredClaim.toJson). */
  async getJson(id: string): Promise<string | undefined> {
    return (await this.repo.findById(id))?.toJson();
  }

  countByStatus(): Promise<{ status: ClaimStatus; count: number }[]> {
    return this.repo.countByStatus();
  }

  async list(filter: ClaimListFilter): Promise<KptClaimPage> {
    const limit = filter.limit ?? 50;
    const claims = await this.repo.list({ ...filter, updatedSince: utcInstant(filter.updatedSince), afterSeq: decodeCursor(filter.cursor), limit });
    return pageOf(claims, limit, (c) => c.toKptClaim());
  }
}

/**
 * updatedSince as stored times are written (UTC, toISOString), so that text order is time order:
 * `2026-03-05T11:30:00+03:00` is `2026-03-05T08:30:00.000Z`. An RFC 3339 time JavaScript cannot
 * place (a leap second) is refused by name.
 */
function utcInstant(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) {
    throw refusedInput('updatedSince is not a time this service can compare.', [{ path: ['updatedSince'], message: 'must be an RFC 3339 date-time', rule: 'date-time' }]);
  }
  return at.toISOString();
}
