// The only SQL for draws: a draw's row, its frame's households (each with its place among the
// drawn, once drawn), and which draws count for KPT rule 5.
import type { DrawSample, FrameMember } from '../../../generated/openapi/types.gen.ts';
import type { KptDraws } from '../../../generated/db/tables.ts';
import { insertInSlices, type Sql } from '../../platform/db/sql.ts';

export type DrawRow = KptDraws;

/** A draw as stored: its row, its frame, and its samples by stratum ('' for none). */
export interface StoredDraw {
  row: DrawRow;
  frame: FrameMember[];
  samples: DrawSample[];
  replacedBy: string | undefined;
}

/** The drawn draws of a collection whose households count: none replaced by a drawn redraw. */
const currentDraws = (sql: Sql, collectionId: string) =>
  sql('kpt_draws as d')
    .where({ 'd.collection_id': collectionId, 'd.status': 'drawn' })
    .whereNotExists(sql('kpt_draws as r').select(sql.raw('1')).whereRaw('r.replaces = d.id').where('r.status', 'drawn'));

export class DrawRepository {
  constructor(private readonly sql: Sql) {}

  /** A draw and its frame; `drawn` gives each drawn household its place in its stratum's sample. */
  async insert(row: DrawRow, frame: FrameMember[], samples: DrawSample[]): Promise<void> {
    await this.sql('kpt_draws').insert(row);
    const places = placesOf(samples);
    const rows = frame.map((m) => ({ draw_id: row.id, household_did: m.household, stratum: m.stratum ?? '', drawn_rank: places.get(m.household) ?? null }));
    await insertInSlices(rows, (slice) => this.sql('kpt_draw_households').insert(slice));
  }

  /** The draw, locked until the transaction ends (PostgreSQL; SQLite has one writer). */
  async findForUpdate(collectionId: string, id: string): Promise<DrawRow | undefined> {
    return this.sql('kpt_draws').where({ id, collection_id: collectionId }).forUpdate().first();
  }

  async find(collectionId: string, id: string): Promise<StoredDraw | undefined> {
    const row = await this.sql('kpt_draws').where({ id, collection_id: collectionId }).first();
    if (!row) return undefined;
    const households = await this.sql('kpt_draw_households').where('draw_id', id).orderBy('household_did');
    const frame = households.map((h) => ({ household: h.household_did, ...(h.stratum ? { stratum: h.stratum } : {}) }));
    const sizes = JSON.parse(row.sample_sizes) as Record<string, number>;
    const strata = [...new Set(households.map((h) => h.stratum))].sort();
    const samples = strata.map((stratum) => {
      const members = households.filter((h) => h.stratum === stratum);
      const drawn = members.filter((h) => h.drawn_rank !== null).sort((a, b) => a.drawn_rank! - b.drawn_rank!).map((h) => h.household_did);
      return { ...(stratum ? { stratum } : {}), frameSize: members.length, sampleSize: sizes[stratum]!, drawn };
    });
    const replacing = await this.sql('kpt_draws').select('id').where('replaces', id).first();
    return { row, frame, samples, replacedBy: replacing?.id };
  }

  /** Whether a draw of another collection, or none, has this id: a redraw names a draw of its own collection. */
  async replaceable(collectionId: string, id: string): Promise<'missing' | 'replaced' | 'ok'> {
    if (!(await this.sql('kpt_draws').where({ id, collection_id: collectionId }).first())) return 'missing';
    return (await this.sql('kpt_draws').where('replaces', id).first()) ? 'replaced' : 'ok';
  }

  /** Marks a committed draw drawn (its seed is answered from now on) with its drawn households. */
  async reveal(id: string, revealedAt: string, samples: DrawSample[]): Promise<void> {
    await this.sql('kpt_draws').update({ status: 'drawn', revealed_at: revealedAt }).where({ id, status: 'committed' });
    for (const [household, place] of placesOf(samples)) {
      await this.sql('kpt_draw_households').update({ drawn_rank: place }).where({ draw_id: id, household_did: household });
    }
  }

  /** The current draw (see currentDraws) that drew the household, the latest if several did. */
  async drawnIn(collectionId: string, householdDid: string): Promise<string | undefined> {
    const rows = (await currentDraws(this.sql, collectionId)
      .join('kpt_draw_households as h', 'h.draw_id', 'd.id')
      .where('h.household_did', householdDid)
      .whereNotNull('h.drawn_rank')
      .select('d.id')
      .orderBy([{ column: 'd.created_at', order: 'desc' }, { column: 'd.id', order: 'desc' }])
      .limit(1)) as { id: string }[];
    return rows[0]?.id;
  }

  /** The ids of the collection's current draws, oldest first. */
  async current(collectionId: string): Promise<string[]> {
    const rows = (await currentDraws(this.sql, collectionId).select('d.id').orderBy(['d.created_at', 'd.id'])) as { id: string }[];
    return rows.map((r) => r.id);
  }
}

/** Each drawn household's place in its stratum's sample. */
function placesOf(samples: DrawSample[]): Map<string, number> {
  return new Map(samples.flatMap((s) => s.drawn.map((household, i) => [household, i] as const)));
}

