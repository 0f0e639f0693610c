// The only SQL of the user-preferences plugin. One row per (user DID, room id). Agent runtimes
// read preferences on every turn, so that read is plain SQL (platform/db/sql.ts).
import type { Db } from '../../../platform/db/index.ts';
import { sqlOf } from '../../../platform/db/sql.ts';
import { PREFERENCE_FIELDS, type PreferenceField, type PreferencesPatch, type UserPreferences } from './record.ts';

const TABLE = 'agent_user_preferences';

const COLUMN: Record<PreferenceField, string> = {
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

type Row = Record<string, string | null>;

function toRecord(row: Row): UserPreferences {
  const record: Record<string, unknown> = {};
  for (const f of PREFERENCE_FIELDS) record[f] = row[COLUMN[f]] ?? null;
  record.updatedAt = row.updated_at;
  return record as UserPreferences;
}

export class UserPreferencesRepository {
  constructor(private readonly db: Db) {}

  async find(userDid: string, roomId: string): Promise<UserPreferences | undefined> {
    const row = await sqlOf(this.db).one<Row>(`select * from ${TABLE} where user_did = ? and room_id = ?`, [userDid, roomId]);
    return row ? toRecord(row) : undefined;
  }

  /**
   * Writes the given fields only, in one atomic upsert: a new row gets them (others null), an
   * existing row keeps every column not named. Two concurrent calls on different fields therefore
   * both survive: PostgreSQL's ON CONFLICT DO UPDATE locks the row and applies each update to the
   * latest version, and SQLite serialises writers. Returns the merged record.
   */
  async mergeFields(userDid: string, roomId: string, patch: PreferencesPatch, updatedAt: string): Promise<UserPreferences> {
    const columns: Row = {};
    for (const f of PREFERENCE_FIELDS) {
      if (patch[f] !== undefined) columns[COLUMN[f]] = patch[f];
    }
    const [row] = await this.db<Row>(TABLE)
      .insert({ user_did: userDid, room_id: roomId, ...columns, updated_at: updatedAt })
      .onConflict(['user_did', 'room_id'])
      .merge([...Object.keys(columns), 'updated_at'])
      .returning('*');
    return toRecord(row as Row);
  }
}
