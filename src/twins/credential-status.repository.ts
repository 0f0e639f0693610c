// The only SQL for credential status: the index counter, the state of revoked or suspended
// indexes, and the audit rows of every change.
import type { Sql } from '../platform/db/sql.ts';
import { insertInto } from '../platform/db/sql.ts';

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

interface CredentialStatusRow {
  status_list_index: number;
  claim_id: string;
  revoked: boolean;
  suspended: boolean;
  updated_at: string;
}

interface StatusEventRow {
  claim_id: string;
  status_list_index: number;
  action: string;
  reason: string;
  actor_did: string;
  api_key_id: string | null;
  created_at: string;
}

const COUNTER = 'credentials';
// SQLite answers booleans as 0/1.
const indexStateOf = (r: CredentialStatusRow): IndexState => ({
  index: Number(r.status_list_index),
  claimId: r.claim_id,
  revoked: !!Number(r.revoked),
  suspended: !!Number(r.suspended),
  updatedAt: r.updated_at,
});
const statusRowOf = (s: IndexState): CredentialStatusRow => ({
  status_list_index: s.index,
  claim_id: s.claimId,
  revoked: s.revoked,
  suspended: s.suspended,
  updated_at: s.updatedAt,
});
const eventOf = (r: StatusEventRow): StatusEvent => ({
  claimId: r.claim_id,
  index: r.status_list_index,
  action: r.action,
  reason: r.reason,
  actorDid: r.actor_did,
  apiKeyId: r.api_key_id,
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

export class CredentialStatusRepository {
  constructor(private readonly sql: Sql) {}

  /** Reserves `count` consecutive indexes; the first. Call in a transaction: the update holds the counter to the commit. */
  async reserveIndexes(count: number): Promise<number> {
    await this.sql.run('update twin_status_index_counter set next_index = next_index + ? where name = ?', [count, COUNTER]);
    const row = await this.sql.one<{ next_index: number | string }>('select next_index from twin_status_index_counter where name = ?', [COUNTER]);
    return Number(row!.next_index) - count;
  }

  /** The first index not reserved yet. */
  async nextUnreserved(): Promise<number> {
    return Number((await this.sql.one<{ next_index: number | string }>('select next_index from twin_status_index_counter where name = ?', [COUNTER]))!.next_index);
  }

  /** When the lists started: the time of a list nothing has changed yet. */
  async listsCreatedAt(): Promise<string> {
    return (await this.sql.one<{ created_at: string }>('select created_at from twin_status_index_counter where name = ?', [COUNTER]))!.created_at;
  }

  async find(index: number): Promise<IndexState | undefined> {
    const row = await this.sql.one<CredentialStatusRow>('select * from twin_credential_statuses where status_list_index = ?', [index]);
    return row && indexStateOf(row);
  }

  async save(state: IndexState): Promise<void> {
    const [insert, bindings] = insertInto('twin_credential_statuses', { ...statusRowOf(state) });
    await this.sql.run(
      `${insert} on conflict (status_list_index) do update set revoked = excluded.revoked, suspended = excluded.suspended, updated_at = excluded.updated_at`,
      bindings,
    );
  }

  async addEvent(event: StatusEvent): Promise<void> {
    await this.sql.run(...insertInto('twin_credential_status_events', { ...eventRowOf(event) }));
  }

  async events(claimId: string): Promise<StatusEvent[]> {
    const rows = await this.sql.all<StatusEventRow>('select claim_id, status_list_index, action, reason, actor_did, api_key_id, created_at from twin_credential_status_events where claim_id = ? order by id', [claimId]);
    return rows.map(eventOf);
  }

  /** Indexes in [first, last] whose bit for `purpose` is set, and the latest change in that range. */
  async listState(first: number, last: number, purpose: 'revocation' | 'suspension'): Promise<{ set: number[]; lastChange?: string }> {
    const column = purpose === 'revocation' ? 'revoked' : 'suspended';
    const rows = await this.sql.all<{ status_list_index: number | string }>(
      `select status_list_index from twin_credential_statuses where status_list_index between ? and ? and ${column} = ?`,
      [first, last, true],
    );
    const latest = await this.sql.one<{ at: string | null }>('select max(updated_at) as at from twin_credential_statuses where status_list_index between ? and ?', [first, last]);
    return { set: rows.map((r) => Number(r.status_list_index)), ...(latest?.at ? { lastChange: latest.at } : {}) };
  }
}
