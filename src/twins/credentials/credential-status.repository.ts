// The only SQL for credential status: the status lists (their keys, base URLs and positions
// handed out), the state of revoked or suspended indexes, and the audit rows of every change.
import { lockUntilCommit, type Sql } from '../../platform/db/sql.ts';
import type { KptClaims, TwinCredentialStatusEvents, TwinStatusLists } from '../../../generated/db/tables.ts';

/** One status list: the key that signs it, the base URL its credentials name it under, its positions handed out. */
export interface StatusList {
  list: number;
  /** Null only until the current key adopts a list made before lists had keys. */
  issuerDid: string | null;
  baseUrl: string | null;
  /** Hex secret that spreads its positions; null: handed out in order. */
  positionKey: string | null;
  nextPosition: number;
  createdAt: string;
}

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

const statusListOf = (r: TwinStatusLists): StatusList => ({
  list: Number(r.list),
  issuerDid: r.issuer_did ?? null,
  baseUrl: r.base_url ?? null,
  positionKey: r.position_key ?? null,
  nextPosition: Number(r.next_position),
  createdAt: r.created_at,
});

export class CredentialStatusRepository {
  constructor(private readonly sql: Sql) {}

  /** Holds the status lists until the transaction ends: reservations of positions run one at a time. */
  holdLists(): Promise<void> {
    return lockUntilCommit(this.sql, 'status-lists');
  }

  async findList(list: number): Promise<StatusList | undefined> {
    const row = await this.sql('twin_status_lists').first().where('list', list);
    return row && statusListOf(row);
  }

  /** The list of this key and base URL that still has positions to hand out, if any. */
  async openList(issuerDid: string, baseUrl: string, size: number): Promise<StatusList | undefined> {
    const row = await this.sql('twin_status_lists').first().where({ issuer_did: issuerDid, base_url: baseUrl }).where('next_position', '<', size).orderBy('list');
    return row && statusListOf(row);
  }

  async lastListNumber(): Promise<number | undefined> {
    const row = (await this.sql('twin_status_lists').max({ list: 'list' }).first()) as { list: number | null } | undefined;
    return row?.list === null || row?.list === undefined ? undefined : Number(row.list);
  }

  async addList(list: StatusList): Promise<void> {
    await this.sql('twin_status_lists').insert({
      list: list.list, issuer_did: list.issuerDid, base_url: list.baseUrl, position_key: list.positionKey, next_position: list.nextPosition, created_at: list.createdAt,
    });
  }

  /** Hands out `count` more positions of a list. */
  async advance(list: number, count: number): Promise<void> {
    await this.sql('twin_status_lists').increment('next_position', count).where('list', list);
  }

  /** Gives the lists made before lists had keys to this key and base URL. */
  async adoptUnowned(issuerDid: string, baseUrl: string): Promise<void> {
    await this.sql('twin_status_lists').update({ issuer_did: issuerDid }).whereNull('issuer_did');
    await this.sql('twin_status_lists').update({ base_url: baseUrl }).whereNull('base_url');
  }

  /** The keys that sign status lists. */
  async listIssuers(): Promise<string[]> {
    return (await this.sql('twin_status_lists').distinct('issuer_did').whereNotNull('issuer_did')).flatMap((r) => (r.issuer_did ? [r.issuer_did] : []));
  }

  /** The state of an index whose status has changed; undefined for one that never did. */
  async find(index: number): Promise<IndexState | undefined> {
    const row = (await this.changed().first(...STATUS_COLUMNS).where('status_list_index', index)) as StatusColumns | undefined;
    return row && indexStateOf(row);
  }

  /** Writes the state onto the row of the claim holding the index; the claim shows it (credentialState), so it is updated then too. */
  async save(state: IndexState): Promise<void> {
    await this.sql('kpt_claims')
      .update({
        credential_revoked: state.revoked,
        credential_suspended: state.suspended,
        credential_status_changed_at: state.updatedAt,
        updated_at: state.updatedAt,
      })
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
