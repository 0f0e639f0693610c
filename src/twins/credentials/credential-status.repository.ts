// The only SQL for credential status: the index counter, the state of revoked or suspended
// indexes, and the audit rows of every change.
import type { Sql } from '../../platform/db/sql.ts';
import type { KptClaims, TwinCredentialStatusEvents } from '../../../generated/db/tables.ts';

/** The state of one status list index: its claim's credential, revoked or suspended. */
export interface IndexState {
  index: number;
  claimId: string;
  revoked: boolean;
  suspended: boolean;
  updatedAt: string;
}

/** One change of a credential's status: who made it and why. */
export interface StatusEvent {
  claimId: string;
  index: number;
  action: string;
  reason: string;
  actorDid: string;
  apiKeyId: string | null;
  at: string;
}

type StatusEventRow = Omit<TwinCredentialStatusEvents, 'id'>;

const COUNTER = 'credentials';
// A credential's status is kept on its claim's row (migration 405).
const STATUS_COLUMNS = ['id', 'status_list_index', 'credential_revoked', 'credential_suspended', 'credential_status_changed_at'] as const;
/** Read only where the status has changed (`changed`): its time is set. */
type StatusColumns = Pick<KptClaims, (typeof STATUS_COLUMNS)[number]> & { credential_status_changed_at: string };
// SQLite answers booleans as 0/1.
const indexStateOf = (r: StatusColumns): IndexState => ({
  index: Number(r.status_list_index),
  claimId: r.id,
  revoked: !!Number(r.credential_revoked),
  suspended: !!Number(r.credential_suspended),
  updatedAt: r.credential_status_changed_at,
});
const eventOf = (r: StatusEventRow): StatusEvent => ({
  claimId: r.claim_id,
  index: r.status_list_index,
  action: r.action,
  reason: r.reason,
  actorDid: r.actor_did,
  apiKeyId: r.api_key_id ?? null,
  at: r.created_at,
});
const eventRowOf = (e: StatusEvent): StatusEventRow => ({
  claim_id: e.claimId,
  status_list_index: e.index,
  action: e.action,
  reason: e.reason,
  actor_did: e.actorDid,
  api_key_id: e.apiKeyId,
  created_at: e.at,
});

const counter = (sql: Sql) => sql('twin_status_index_counter').where('name', COUNTER);

export class CredentialStatusRepository {
  constructor(private readonly sql: Sql) {}

  /** Reserves `count` consecutive indexes; the first. Call in a transaction: the update holds the counter to the commit. */
  async reserveIndexes(count: number): Promise<number> {
    await counter(this.sql).increment('next_index', count);
    return (await this.nextUnreserved()) - count;
  }

  /** The first index not reserved yet. */
  async nextUnreserved(): Promise<number> {
    return Number((await counter(this.sql).first('next_index'))!.next_index);
  }

  /** When the lists started: the time of a list nothing has changed yet. */
  async listsCreatedAt(): Promise<string> {
    return (await counter(this.sql).first('created_at'))!.created_at;
  }

  /** The state of an index whose status has changed; undefined for one that never did. */
  async find(index: number): Promise<IndexState | undefined> {
    const row = (await this.changed().first(...STATUS_COLUMNS).where('status_list_index', index)) as StatusColumns | undefined;
    return row && indexStateOf(row);
  }

  /** Writes the state onto the row of the claim holding the index. */
  async save(state: IndexState): Promise<void> {
    await this.sql('kpt_claims')
      .update({ credential_revoked: state.revoked, credential_suspended: state.suspended, credential_status_changed_at: state.updatedAt })
      .where('status_list_index', state.index)
      .where('id', state.claimId);
  }

  async addEvent(event: StatusEvent): Promise<void> {
    await this.sql('twin_credential_status_events').insert(eventRowOf(event));
  }

  async events(claimId: string): Promise<StatusEvent[]> {
    const rows: StatusEventRow[] = await this.sql('twin_credential_status_events')
      .select('claim_id', 'status_list_index', 'action', 'reason', 'actor_did', 'api_key_id', 'created_at')
      .where('claim_id', claimId)
      .orderBy('id');
    return rows.map(eventOf);
  }

  /** Indexes in [first, last] whose bit for `purpose` is set, and the latest change in that range. */
  async listState(first: number, last: number, purpose: 'revocation' | 'suspension'): Promise<{ set: number[]; lastChange?: string }> {
    const inRange = () => this.changed().where('status_list_index', '>=', first).where('status_list_index', '<=', last);
    const rows = (await inRange()
      .select('status_list_index')
      .where(purpose === 'revocation' ? 'credential_revoked' : 'credential_suspended', true)) as { status_list_index: number }[];
    const latest = (await inRange().max({ at: 'credential_status_changed_at' }).first()) as { at: string | null } | undefined;
    return { set: rows.map((r) => Number(r.status_list_index)), ...(latest?.at ? { lastChange: latest.at } : {}) };
  }

  /** The claims whose credential status has changed (kpt_claims_credential_status_changed_index). */
  private changed() {
    return this.sql('kpt_claims').whereNotNull('credential_status_changed_at');
  }
}
