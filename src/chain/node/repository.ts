// The node's reads over area A's tables (twin_entities, kpt_claims, kpt_collections). Area A's
// page functions page forwards only; Cosmos also pages in reverse and resumes from an
// inclusive key, so the node orders by the tables' insertion sequence (`seq`) itself.
// Keys handed out are that sequence as a decimal string.
import { Code, ConnectError } from '@connectrpc/connect';
import type { Db } from '../../platform/db/index.ts';
import type { ChainReadModel, ClaimEvaluation, ClaimRecord, CollectionRecord, EntityRecord } from './model.ts';
import type { OrderedStore, PageWindow } from './pagination.ts';

interface EntityRow {
  seq: number;
  did: string;
  type: string;
  protocol_did: string | null;
  controller: string;
  services: string;
  verifiable_credentials: string;
  created_at: string;
  updated_at: string;
}

interface ClaimRow {
  seq: number;
  id: string;
  collection_id: string;
  household_did: string;
  status: string;
  credential: string | null;
  verifiable_credential: string | null;
  created_at: string;
  updated_at: string;
  verified_at: string | null;
}

interface CollectionRow {
  seq: number;
  id: string;
  created_by: string;
  created_at: string;
}

interface CollectionCounts {
  collection_id: string;
  count: number | string;
  evaluated: number | string;
  approved: number | string;
  rejected: number | string;
}

const parseJson = <T>(text: string | null, fallback: T): T => {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
};

function entityRecord(r: EntityRow): EntityRecord {
  const services = parseJson<{ id?: string; type?: string; endpoint?: string }[]>(r.services, []);
  const credentials = parseJson<{ type?: string; issuer?: string }[]>(r.verifiable_credentials, []);
  return {
    did: r.did,
    type: r.type,
    controller: r.controller,
    services: services.map((s) => ({ id: s.id ?? '', type: s.type ?? '', endpoint: s.endpoint ?? '' })),
    credentials: credentials.map((c) => ({ type: c.type ?? '', issuer: c.issuer ?? '' })),
    protocol: r.protocol_did,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Area A's claim status -> the claims module's evaluation status. */
export function evaluationOf(status: string): ClaimEvaluation {
  if (status === 'verified') return 'APPROVED';
  if (status === 'rejected') return 'REJECTED';
  return 'PENDING';
}

function claimRecord(r: ClaimRow): ClaimRecord {
  const credential = parseJson<{ issuer?: string }>(r.credential, {});
  const vc = parseJson<{ id?: string; issuer?: string | { id?: string } }>(r.verifiable_credential, {});
  const vcIssuer = typeof vc.issuer === 'string' ? vc.issuer : vc.issuer?.id;
  const evaluation = evaluationOf(r.status);
  return {
    id: r.id,
    collectionId: r.collection_id,
    agentDid: r.household_did,
    submittedAt: r.created_at,
    evaluation,
    evaluatedAt: evaluation === 'PENDING' ? null : (r.verified_at ?? r.updated_at),
    oracle: credential.issuer ?? vcIssuer ?? '',
    verificationProof: vc.id ?? '',
  };
}

function keySeq(key: string): number {
  if (!/^\d{1,15}$/.test(key)) throw new ConnectError('pagination key is not a key this node issued', Code.InvalidArgument);
  return Number(key);
}

/** An OrderedStore over one table ordered by `seq`. */
function seqStore<R extends { seq: number }, T>(db: Db, table: string, map: (rows: R[]) => Promise<T[]>): OrderedStore<T & { seq: number }> {
  return {
    async fetch(w: PageWindow) {
      const q = db<R>(table).select('*').orderBy('seq', w.reverse ? 'desc' : 'asc').limit(w.take);
      if (w.fromKey !== undefined) q.where('seq', w.reverse ? '<=' : '>=', keySeq(w.fromKey));
      if (w.offset) q.offset(w.offset);
      const rows = (await q) as R[];
      const mapped = await map(rows);
      return mapped.map((m, i) => ({ ...m, seq: rows[i]!.seq }));
    },
    async count() {
      const c = (await db(table).count({ n: '*' }).first()) as { n: number | string };
      return Number(c.n);
    },
    keyOf: (item) => String(item.seq),
  };
}

export class ChainRepository implements ChainReadModel {
  readonly entities: OrderedStore<EntityRecord>;
  readonly claims: OrderedStore<ClaimRecord>;
  readonly collections: OrderedStore<CollectionRecord>;

  constructor(private readonly db: Db) {
    this.entities = seqStore<EntityRow, EntityRecord>(db, 'twin_entities', async (rows) => rows.map(entityRecord));
    this.claims = seqStore<ClaimRow, ClaimRecord>(db, 'kpt_claims', async (rows) => rows.map(claimRecord));
    this.collections = seqStore<CollectionRow, CollectionRecord>(db, 'kpt_collections', (rows) => this.collectionRecords(rows));
  }

  async getEntity(did: string): Promise<EntityRecord | undefined> {
    const row = await this.db<EntityRow>('twin_entities').where({ did }).first();
    return row ? entityRecord(row) : undefined;
  }

  async getClaim(id: string): Promise<ClaimRecord | undefined> {
    const row = await this.db<ClaimRow>('kpt_claims').where({ id }).first();
    return row ? claimRecord(row) : undefined;
  }

  async getCollection(id: string): Promise<CollectionRecord | undefined> {
    const row = await this.db<CollectionRow>('kpt_collections').where({ id }).first();
    return row ? (await this.collectionRecords([row]))[0] : undefined;
  }

  /** Collections with their claim counts, one aggregate query per page. */
  private async collectionRecords(rows: CollectionRow[]): Promise<CollectionRecord[]> {
    if (!rows.length) return [];
    const counts = (await this.db('kpt_claims')
      .whereIn('collection_id', rows.map((r) => r.id))
      .groupBy('collection_id')
      .select('collection_id')
      .count({ count: '*' })
      .select(
        this.db.raw("sum(case when status <> 'pending' then 1 else 0 end) as evaluated"),
        this.db.raw("sum(case when status = 'verified' then 1 else 0 end) as approved"),
        this.db.raw("sum(case when status = 'rejected' then 1 else 0 end) as rejected"),
      )) as unknown as CollectionCounts[];
    const byId = new Map(counts.map((c) => [c.collection_id, c]));
    return rows.map((r) => {
      const c = byId.get(r.id);
      return {
        id: r.id,
        entity: '',
        admin: r.created_by,
        protocol: '',
        startDate: r.created_at,
        endDate: null,
        count: Number(c?.count ?? 0),
        evaluated: Number(c?.evaluated ?? 0),
        approved: Number(c?.approved ?? 0),
        rejected: Number(c?.rejected ?? 0),
        open: true,
      };
    });
  }
}

