// KPT rule 5 (random selection verified) from the collection's selection design: it holds only
// for a household in the frame of a full-population campaign, or drawn by a current draw of the
// campaign. A self-selected campaign, or a collection declaring no design, passes it for none.
import type { Collection, SelectionDesign } from '../../../generated/openapi/types.gen.ts';
import type { Sql } from '../../platform/db/sql.ts';
import { findEntityRow } from '../entities/entities.repository.ts';
import { maySubmitInto } from './collections.ts';
import { DrawRepository } from './draws.repository.ts';

/** What a credential states of how its household was selected. */
export interface SelectionStatement {
  design: SelectionDesign['type'];
  frame: string;
  /** The draw that drew (or, for a census, listed) the household. */
  drawId?: string;
}

export type SelectionVerdict = { passed: true; message: string; statement: SelectionStatement } | { passed: false; message: string };

/** What rule 5 reads of a household in a collection. */
export interface SelectionFacts {
  collection: Pick<Collection, 'selectionDesign' | 'createdBy' | 'submitters' | 'openToAll'>;
  /** The household's controller when it is a registered entity. */
  householdController: string | undefined;
  /** The current draw of the collection that drew it. */
  drawId: string | undefined;
}

export function selectionVerdict({ collection, householdController, drawId }: SelectionFacts): SelectionVerdict {
  const design = collection.selectionDesign;
  if (!design) return { passed: false, message: 'the collection declares no selection design (selectionDesign), so no household of it is shown to be randomly selected' };
  if (design.type === 'self-selected') {
    return { passed: false, message: 'the campaign is self-selected (households enrolled themselves): not a random sample, so its claims are kept apart and never pass this rule' };
  }
  const statement = { design: design.type, frame: design.frame };
  if (design.frameSource === 'registered-households') {
    // The frame: households registered on the service by a principal that may submit into the campaign.
    if (householdController !== undefined && maySubmitInto(collection, householdController)) {
      return { passed: true, message: `the household is in the frame of this full-population campaign: ${design.frame}`, statement };
    }
    return { passed: false, message: "the household is not registered on this service by the campaign's creator or submitters, so it is not in the frame of this full-population campaign" };
  }
  if (drawId === undefined) {
    return { passed: false, message: 'the household is not among the households drawn for this campaign (POST /v1/collections/{id}/draws)' };
  }
  const how = design.type === 'full-population' ? `listed in census ${drawId} of this full-population campaign` : `drawn by ${design.type} draw ${drawId}`;
  return { passed: true, message: `the household was ${how}`, statement: { ...statement, drawId } };
}

/** Rule 5's verdict for a household in a collection, read in `sql`. */
export async function selectionOf(sql: Sql, collection: Collection, householdDid: string): Promise<SelectionVerdict> {
  const design = collection.selectionDesign;
  const registered = design?.frameSource === 'registered-households';
  return selectionVerdict({
    collection,
    householdController: registered ? (await findEntityRow(sql, householdDid))?.controller : undefined,
    drawId: design && !registered && design.type !== 'self-selected' ? await new DrawRepository(sql).drawnIn(collection.id, householdDid) : undefined,
  });
}
