// The only SQL of the user-preferences plugin. One row per (user DID, room id).
import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../../platform/db/index.ts';
import { prepared, preparedPerColumnSet } from '../../../platform/db/prepared.ts';
import type { AgentUserPreferences } from '../../../../generated/db/database.ts';
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

function toRecord(row: Selectable<AgentUserPreferences>): UserPreferences {
  const record: Record<string, unknown> = {};
  for (const f of PREFERENCE_FIELDS) record[f] = row[COLUMN[f]] ?? null;
  record.updatedAt = row.updated_at;
  return record as UserPreferences;
}

// Prepared (platform/db/prepared.ts): every agent turn reads the preferences.
const preferencesOf = prepared((db: Db, userDid: string, roomId: string) =>
  db.selectFrom('agent_user_preferences').selectAll().where('user_did', '=', userDid).where('room_id', '=', roomId),
  { planOnce: true, sharesRoundTrip: true },
);

/**
 * Writes the columns given (and the row's key and updated_at), prepared per set of columns
 * (prepared.ts preparedPerColumnSet): sent as new text each time, it was parsed on every write.
 */
const upsertColumns = preparedPerColumnSet(
  (given) => {
    const merged = [...given, 'updated_at' as const];
    return (db: Db, row: Insertable<AgentUserPreferences>) =>
      db
        .insertInto('agent_user_preferences')
        .values(row)
        .onConflict((oc) => oc.columns(['user_did', 'room_id']).doUpdateSet((eb) => Object.fromEntries(merged.map((c) => [c, eb.ref(`excluded.${c}`)]))))
        .returningAll();
  },
  { row: 0, optional: PREFERENCE_FIELDS.map((f) => COLUMN[f]), always: ['user_did', 'room_id', 'updated_at'], sharesRoundTrip: true },
);

export class UserPreferencesRepository {
  constructor(private readonly db: Db) {}

  async find(userDid: string, roomId: string): Promise<UserPreferences | undefined> {
    const [row] = (await preferencesOf(this.db, userDid, roomId)).rows;
    return row ? toRecord(row) : undefined;
  }

  /**
   * Writes the given fields only, in one atomic upsert: a new row gets them (others null), an
   * existing row keeps every column not named. Two concurrent calls on different fields therefore
   * both survive: PostgreSQL's ON CONFLICT DO UPDATE locks the row and applies each update to the
   * latest version, and SQLite serialises writers. Returns the merged record.
   */
  async mergeFields(userDid: string, roomId: string, patch: PreferencesPatch, updatedAt: string): Promise<UserPreferences> {
    // A field left out (undefined) is not written: upsertColumns leaves it out of the statement.
    const columns: Partial<Record<Column, string | null>> = {};
    for (const f of PREFERENCE_FIELDS) columns[COLUMN[f]] = patch[f];
    const [row] = (await upsertColumns(this.db, { user_did: userDid, room_id: roomId, ...columns, updated_at: updatedAt })).rows;
    return toRecord(row!);
  }
}
