// Revocation and suspension of KPT credentials (Bitstring Status List v1.0): index allocation,
// audited status changes, the signed status list credentials and the status check of verify.
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, type Sql } from '../../platform/db/sql.ts';
import { conflictWith, notFoundError } from '../../platform/domain-errors.ts';
import type { CredentialStatus, CredentialStatusChangeRequest, VerifiableCredential } from '../../../generated/openapi/types.gen.ts';
import { credentialIdOf } from '../claims/claim-seal.ts';
import { ClaimRepository } from '../claims/claims.repository.ts';
import { encodeStatusList, indexOfEntry, MAX_STATUS_LIST, STATUS_LIST_SIZE, statusListUrl, type StatusPurpose } from './credential-status.ts';
import { CredentialStatusRepository, type IndexState } from './credential-status.repository.ts';
import { signCredential, VC_V2_CONTEXT } from './credentials.ts';
import type { PublicBase } from './kpt-context.ts';
import type { ValidatorKey } from './validator-key.ts';

/** Indexes an instance reserves at a time: one counter update per this many credentials. */
const BLOCK = 64;

export interface StatusActor {
  did: string;
  keyId?: string;
}

export type StatusAction = CredentialStatusChangeRequest['action'];

export class CredentialStatusService {
  private next = 0;
  private end = 0;
  private reserving?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly opts: { base: PublicBase; validatorKey: () => Promise<ValidatorKey> },
  ) {}

  /** A status index no other credential has (reserved in blocks; an unused rest is never reused). */
  async nextIndex(): Promise<number> {
    while (this.next >= this.end) {
      this.reserving ??= inTransaction(this.db, (sql) => new CredentialStatusRepository(sql).reserveIndexes(BLOCK))
        .then((first) => {
          this.next = first;
          this.end = first + BLOCK;
        })
        .finally(() => (this.reserving = undefined));
      await this.reserving;
    }
    return this.next++;
  }

  /** One index, reserved in the caller's transaction. */
  indexIn(sql: Sql): Promise<number> {
    return new CredentialStatusRepository(sql).reserveIndexes(1);
  }

  async get(claimId: string): Promise<CredentialStatus> {
    const sql = this.db;
    const index = await statusIndexOfClaim(sql, claimId);
    return this.view(new CredentialStatusRepository(sql), claimId, index);
  }

  async change(actor: StatusActor, claimId: string, request: CredentialStatusChangeRequest): Promise<CredentialStatus> {
    return inTransaction(this.db, async (sql) => {
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

  /** The signed status list credential of one list; the same bytes until the list changes. */
  async listCredential(purpose: StatusPurpose, list: number): Promise<VerifiableCredential> {
    const repo = new CredentialStatusRepository(this.db);
    const first = list * STATUS_LIST_SIZE;
    // List 0 exists from the start; a later one once an index in it was handed out.
    if (list > 0 && (list > MAX_STATUS_LIST || first >= (await repo.nextUnreserved()))) throw notFoundError(`No ${purpose} status list ${list}.`);
    const state = await repo.listState(first, first + STATUS_LIST_SIZE - 1, purpose);
    const validFrom = state.lastChange ?? (await repo.listsCreatedAt());
    const url = statusListUrl(this.opts.base, purpose, list);
    const key = await this.opts.validatorKey();
    return signCredential(
      {
        '@context': [VC_V2_CONTEXT],
        id: url,
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: key.did,
        validFrom,
        credentialSubject: { id: `${url}#list`, type: 'BitstringStatusList', statusPurpose: purpose, encodedList: encodeStatusList(state.set.map((i) => i - first)) },
      },
      key,
      new Date(validFrom),
    );
  }

  /** The verify endpoint's status check: every credentialStatus entry must name a list of this service and an unset bit. */
  async check(credential: Record<string, unknown>): Promise<{ passed: boolean; message?: string }> {
    if (credential.credentialStatus === undefined) return { passed: true };
    const entries = Array.isArray(credential.credentialStatus) ? credential.credentialStatus : [credential.credentialStatus];
    const repo = new CredentialStatusRepository(this.db);
    for (const entry of entries) {
      const found = indexOfEntry(this.opts.base, entry);
      if ('error' in found) return { passed: false, message: found.error };
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
async function currentStatus(sql: Sql, claimId: string): Promise<IndexState> {
  const index = await statusIndexOfClaim(sql, claimId, 'update');
  const stored = await new CredentialStatusRepository(sql).find(index);
  return stored ?? { index, claimId, revoked: false, suspended: false, updatedAt: new Date().toISOString() };
}

/** Writes the state `action` leaves, and who took it and why. */
async function applyChange(sql: Sql, actor: StatusActor, current: IndexState, action: StatusAction, reason: string): Promise<void> {
  const repo = new CredentialStatusRepository(sql);
  const now = new Date().toISOString();
  await repo.save({
    ...current,
    revoked: current.revoked || action === 'revoke',
    suspended: action === 'suspend' ? true : action === 'reinstate' ? false : current.suspended,
    updatedAt: now,
  });
  await repo.addEvent({ claimId: current.claimId, index: current.index, action, reason, actorDid: actor.did, apiKeyId: actor.keyId ?? null, at: now });
}

/**
 * The status index of a claim's credential: 404 without the claim, 409 without a credential that
 * has one. `update`: the claim's row stays locked until the transaction ends.
 */
async function statusIndexOfClaim(sql: Sql, claimId: string, lock?: 'update'): Promise<number> {
  const claims = new ClaimRepository(sql);
  const claim = await (lock ? claims.findByIdForUpdate(claimId) : claims.findById(claimId));
  if (!claim) throw notFoundError(`No claim ${claimId}.`);
  if (!claim.credential || claim.statusListIndex === null) {
    throw conflictWith(`Claim ${claimId} has no credential with a status entry (it is not verified, or was verified before status lists).`, undefined, 'no-credential-status');
  }
  return claim.statusListIndex;
}
