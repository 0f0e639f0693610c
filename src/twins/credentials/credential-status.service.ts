// Revocation and suspension of KPT credentials (Bitstring Status List v1.0): index allocation,
// audited status changes, the signed status list credentials and the status check of verify.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, type Sql } from '../../platform/db/sql.ts';
import { conflictWith, notFoundError, UnavailableError } from '../../platform/domain-errors.ts';
import type { CredentialStatus, CredentialStatusChangeRequest, VerifiableCredential } from '../../../generated/openapi/types.gen.ts';
import { credentialIdOf } from '../claims/claim-seal.ts';
import { ClaimRepository, type StoredClaim } from '../claims/claims.repository.ts';
import { credentialEvent } from '../events/events.ts';
import { collectionOwner, openEventWrites, recordEvents } from '../events/events.repository.ts';
import { encodeStatusList, indexOfEntry, MAX_STATUS_LIST, spreadPosition, STATUS_LIST_SIZE, STATUS_LIST_TTL_MS, statusListUrl, statusListValidUntil, type StatusPurpose } from './credential-status.ts';
import { CredentialStatusRepository, type IndexState } from './credential-status.repository.ts';
import { signCredential, VC_V2_CONTEXT } from './credentials.ts';
import type { PublicBase } from './kpt-context.ts';
import type { ValidatorKeys } from './validator-key.ts';
import { isCurrentKey } from './validator-key.repository.ts';

/** Indexes an instance reserves at a time: one counter update per this many credentials. */
const BLOCK = 64;

export interface StatusActor {
  did: string;
  keyId?: string;
}

export type StatusAction = CredentialStatusChangeRequest['action'];

/** Positions of one list reserved by this instance: the next to hand out, and the end. */
interface Reservation {
  list: number;
  key: Buffer | null;
  next: number;
  end: number;
}

const indexOf = (r: Reservation, n: number) => r.list * STATUS_LIST_SIZE + spreadPosition(r.key, n);

export class CredentialStatusService {
  private block?: Reservation;
  private reserving?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly opts: { base: PublicBase; keys: ValidatorKeys; now?: () => Date },
  ) {}

  /** At start-up: lists made before lists had keys become the current key's, under this base URL. */
  async start(): Promise<void> {
    await new CredentialStatusRepository(this.db).adoptUnowned(this.opts.keys.current.did, this.opts.base);
  }

  /** A status index no other credential has (reserved in blocks; an unused rest is never reused). */
  async nextIndex(): Promise<number> {
    while (!this.block || this.block.next >= this.block.end) {
      this.reserving ??= inTransaction(this.db, (sql) => this.reserve(sql, BLOCK))
        .then((block) => {
          this.block = block;
        })
        .finally(() => (this.reserving = undefined));
      await this.reserving;
    }
    return indexOf(this.block, this.block.next++);
  }

  /** One index, reserved in the caller's transaction. */
  async indexIn(sql: Sql): Promise<number> {
    const reserved = await this.reserve(sql, 1);
    return indexOf(reserved, reserved.next);
  }

  /**
   * Up to `count` positions of the current key's open list under this base URL (a new list when
   * it has none). A retired key issues nothing new: an instance still holding one is refused.
   */
  private async reserve(sql: Sql, count: number): Promise<Reservation> {
    const repo = new CredentialStatusRepository(sql);
    await repo.holdLists();
    const { did } = this.opts.keys.current;
    if (!(await isCurrentKey(sql, did))) {
      throw new UnavailableError(`This instance's validator key ${did} is retired (an instance started with another VALIDATOR_PRIVATE_KEY): it issues nothing new until this instance restarts with the current key; retry (another instance may answer).`);
    }
    let open = await repo.openList(did, this.opts.base, STATUS_LIST_SIZE);
    if (!open) {
      const list = ((await repo.lastListNumber()) ?? -1) + 1;
      if (list > MAX_STATUS_LIST) throw new Error('every status list number is in use');
      open = { list, issuerDid: did, baseUrl: this.opts.base, positionKey: randomBytes(32).toString('hex'), nextPosition: 0, createdAt: new Date().toISOString() };
      await repo.addList(open);
    }
    const taken = Math.min(count, STATUS_LIST_SIZE - open.nextPosition);
    await repo.advance(open.list, taken);
    return { list: open.list, key: open.positionKey ? Buffer.from(open.positionKey, 'hex') : null, next: open.nextPosition, end: open.nextPosition + taken };
  }

  async get(claimId: string): Promise<CredentialStatus> {
    const sql = this.db;
    const index = await statusIndexOfClaim(sql, claimId);
    return this.view(new CredentialStatusRepository(sql), claimId, index);
  }

  async change(actor: StatusActor, claimId: string, request: CredentialStatusChangeRequest): Promise<CredentialStatus> {
    return inTransaction(this.db, async (sql) => {
      await openEventWrites(sql);
      const index = await this.changeIn(sql, actor, claimId, request.action, request.reason);
      return this.view(new CredentialStatusRepository(sql), claimId, index);
    });
  }

  /** Revokes a claim's credential in the caller's transaction, unless it is revoked already. */
  async revokeIn(sql: Sql, actor: StatusActor, claimId: string, reason: string): Promise<void> {
    const current = await currentStatus(sql, claimId);
    if (!current.revoked) await applyChange(sql, actor, current, 'revoke', reason);
  }

  /**
   * Applies a change in the caller's transaction (409 when it does not apply) and records who
   * made it and why. The credential's status index.
   */
  private async changeIn(sql: Sql, actor: StatusActor, claimId: string, action: StatusAction, reason: string): Promise<number> {
    const current = await currentStatus(sql, claimId);
    const refusal =
      current.revoked ? `The credential of claim ${claimId} is revoked; revocation is final.` :
      action === 'suspend' && current.suspended ? `The credential of claim ${claimId} is already suspended.` :
      action === 'reinstate' && !current.suspended ? `The credential of claim ${claimId} is not suspended.` :
      undefined;
    if (refusal) throw conflictWith(refusal, undefined, 'credential-status-unchanged');
    await applyChange(sql, actor, current, action, reason);
    return current.index;
  }

  private async view(repo: CredentialStatusRepository, claimId: string, index: number): Promise<CredentialStatus> {
    const row = await repo.find(index);
    return {
      claimId,
      credentialId: credentialIdOf(claimId),
      statusListIndex: index,
      revoked: row?.revoked ?? false,
      suspended: row?.suspended ?? false,
      events: (await repo.events(claimId)).map((e) => ({ action: e.action as StatusAction, reason: e.reason, actor: e.actorDid, at: e.at })),
    };
  }

  /** The signed status list credential of one list, signed by its own key; the same bytes until the list changes or the day does. */
  async listCredential(purpose: StatusPurpose, list: number): Promise<VerifiableCredential> {
    const repo = new CredentialStatusRepository(this.db);
    const row = list > MAX_STATUS_LIST ? undefined : await repo.findList(list);
    if (!row?.issuerDid || !row.baseUrl) throw notFoundError(`No ${purpose} status list ${list}.`);
    const key = this.opts.keys.signer(row.issuerDid);
    // Made by an instance with a key this one has not been given (another VALIDATOR_PRIVATE_KEY).
    if (!key) throw new Error(`status list ${list} is signed by ${row.issuerDid}, whose seed this instance does not have (VALIDATOR_RETIRED_KEYS)`);
    const first = list * STATUS_LIST_SIZE;
    const state = await repo.listState(first, first + STATUS_LIST_SIZE - 1, purpose);
    const validFrom = state.lastChange ?? row.createdAt;
    const url = statusListUrl(row.baseUrl, purpose, list);
    return signCredential(
      {
        '@context': [VC_V2_CONTEXT],
        id: url,
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: key.did,
        validFrom,
        validUntil: statusListValidUntil(this.opts.now?.() ?? new Date()),
        credentialSubject: { id: `${url}#list`, type: 'BitstringStatusList', statusPurpose: purpose, ttl: STATUS_LIST_TTL_MS, encodedList: encodeStatusList(state.set.map((i) => i - first)) },
      },
      key,
      new Date(validFrom),
    );
  }

  /**
   * The verify endpoint's status check: every credentialStatus entry must name a list of this
   * service under the base URL the list was made under (earlier base URLs too), kept by the
   * credential's issuer, and an unset bit.
   */
  async check(credential: Record<string, unknown>): Promise<{ passed: boolean; message?: string }> {
    if (credential.credentialStatus === undefined) return { passed: true };
    const entries = Array.isArray(credential.credentialStatus) ? credential.credentialStatus : [credential.credentialStatus];
    const issuerField = credential.issuer as { id?: unknown } | string | undefined;
    const issuer = typeof issuerField === 'string' ? issuerField : issuerField?.id;
    const repo = new CredentialStatusRepository(this.db);
    for (const entry of entries) {
      const found = indexOfEntry(entry);
      if ('error' in found) return { passed: false, message: found.error };
      const list = await repo.findList(found.list);
      if (!list || list.baseUrl !== found.base) {
        return { passed: false, message: `status list ${statusListUrl(found.base, found.purpose, found.list)} is not a ${found.purpose} list this service publishes, so its status cannot be checked here` };
      }
      if (list.issuerDid !== issuer) return { passed: false, message: `status list ${found.list} is kept by ${list.issuerDid}, not by the credential's issuer` };
      const row = await repo.find(found.index);
      if (found.purpose === 'revocation' && row?.revoked) return { passed: false, message: 'the credential is revoked' };
      if (found.purpose === 'suspension' && row?.suspended) return { passed: false, message: 'the credential is suspended' };
    }
    return { passed: true };
  }
}

/**
 * A claim's credential status, read once its claim's row is locked until the caller's transaction
 * ends (the status is kept on that row): changes of one credential (an operator's, a correction's
 * revocation) run one at a time, each deciding on the state the one before it left. Unlocked, two
 * changes read the same state and the later write undid the earlier (a revocation lost to a
 * suspension).
 */
async function currentStatus(sql: Sql, claimId: string): Promise<CurrentStatus> {
  const claim = await claimWithStatus(sql, claimId, 'update');
  const index = claim.statusListIndex!;
  const stored = await new CredentialStatusRepository(sql).find(index);
  return { ...(stored ?? { index, claimId, revoked: false, suspended: false, updatedAt: new Date().toISOString() }), claim };
}

/** A credential's status with the claim it is of (whose events report its changes). */
type CurrentStatus = IndexState & { claim: StoredClaim };

/** Writes the state `action` leaves, and who took it and why. */
async function applyChange(sql: Sql, actor: StatusActor, { claim, ...current }: CurrentStatus, action: StatusAction, reason: string): Promise<void> {
  const repo = new CredentialStatusRepository(sql);
  const now = new Date().toISOString();
  await repo.save({
    ...current,
    revoked: current.revoked || action === 'revoke',
    suspended: action === 'suspend' ? true : action === 'reinstate' ? false : current.suspended,
    updatedAt: now,
  });
  await repo.addEvent({ claimId: current.claimId, index: current.index, action, reason, actorDid: actor.did, apiKeyId: actor.keyId ?? null, at: now });
  const about = { id: claim.id, collectionId: claim.collectionId, submittedBy: claim.submittedBy, credentialId: credentialIdOf(claim.id) };
  await recordEvents(sql, [credentialEvent(action, about, await collectionOwner(sql, claim.collectionId), reason)], now);
}

/** The status index of a claim's credential: 404 without the claim, 409 without a credential that has one. */
async function statusIndexOfClaim(sql: Sql, claimId: string): Promise<number> {
  return (await claimWithStatus(sql, claimId)).statusListIndex!;
}

/** The claim of statusIndexOfClaim (it has a status index). `update`: its row stays locked until the transaction ends. */
async function claimWithStatus(sql: Sql, claimId: string, lock?: 'update'): Promise<StoredClaim> {
  const claims = new ClaimRepository(sql);
  const claim = await (lock ? claims.findByIdForUpdate(claimId) : claims.findById(claimId));
  if (!claim) throw notFoundError(`No claim ${claimId}.`);
  if (!claim.credential || claim.statusListIndex === null) {
    throw conflictWith(`Claim ${claimId} has no credential with a status entry (it is not verified, or was verified before status lists).`, undefined, 'no-credential-status');
  }
  return claim;
}
