// The only SQL of the user-preferences plugin. One row per (user DID, room id).
import type { Db } from '../../../platform/db/index.ts';
import type { AgentUserPreferences } from '../../../../generated/db/tables.ts';
import { PREFERENCE_FIELDS, type PreferenceField, type PreferencesPatch, type UserPreferences } from './record.ts';

type Column = Exclude<keyof AgentUserPreferences, 'user_did' | 'room_id' | 'updated_at'>;

const COLUMN: Record<PreferenceField, Column> = {
  agentName: 'agent_name',
  userName: 'user_name',
  language: 'language',
  tone: 'tone',
  length: 'length',
  format: 'format',
  formality: 'formality',
  emoji: 'emoji',
  customInstructions: 'custom_instructions',
};

function toRecord(row: AgentUserPreferences): UserPreferences {
  const record: Record<string, unknown> = {};
  for (const f of PREFERENCE_FIELDS) record[f] = row[COLUMN[f]] ?? null;
  record.updatedAt = row.updated_at;
  return record as UserPreferences;
}

export class UserPreferencesRepository {
  constructor(private readonly db: Db) {}

  async find(userDid: string, roomId: string): Promise<UserPreferences | undefined> {
    const row = await this.db('agent_user_preferences').where('user_did', userDid).where('room_id', roomId).first();
    return row ? toRecord(row) : undefined;
  }

  /**
   * Writes the given fields only, in one atomic upsert: a new row gets them (others null), an
   * existing row keeps every column not named. Two concurrent calls on different fields therefore
   * both survive: PostgreSQL's ON CONFLICT DO UPDATE locks the row and applies each update to the
   * latest version, and SQLite serialises writers. Returns the merged record as the upsert left
   * it (RETURNING, on both databases).
   */
  async mergeFields(userDid: string, roomId: string, patch: PreferencesPatch, updatedAt: string): Promise<UserPreferences> {
    const columns: Partial<Record<Column, string | null>> = {};
    for (const f of PREFERENCE_FIELDS) if (patch[f] !== undefined) columns[COLUMN[f]] = patch[f];
    const [row] = await this.db('agent_user_preferences')
      .insert({ user_did: userDid, room_id: roomId, ...columns, updated_at: updatedAt })
      .onConflict(['user_did', 'room_id'])
      .merge([...(Object.keys(columns) as Column[]), 'updated_at'])
      .returning('*');
    return toRecord(row!);
  }
}
