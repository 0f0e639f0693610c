// The only SQL for content-addressed evidence (evidence.ts): stored under its CID, once.
import type { Db } from '../../platform/db/index.ts';
import type { EvidenceBlob, EvidenceRow } from './evidence.ts';

/** Stores the evidence; evidence of the same CID is the same bytes, so one already stored stays. */
export async function insertEvidence(db: Db, row: EvidenceRow): Promise<void> {
  await db('twin_evidence_blobs').insert(row).onConflict('cid').ignore();
}

export async function findEvidence(db: Db, cid: string): Promise<EvidenceBlob | undefined> {
  const row = await db('twin_evidence_blobs').first('cid', 'media_type', 'content').where('cid', cid);
  return row ? { cid: row.cid, mediaType: row.media_type, bytes: Buffer.from(row.content, 'utf8') } : undefined;
}
