// The preference record's fields, in the one order used for storage, the tool schema and the
// prompt section. Types come from the contract (generated from openapi/agent.yaml).
import type { UserPreferences } from '../../../../generated/openapi/types.gen.ts';

export type { UserPreferences };
export type PreferenceField = Exclude<keyof UserPreferences, 'updatedAt'>;
/** What a set_user_preferences call carries: each field optional, null clears it. */
export type PreferencesPatch = Partial<Pick<UserPreferences, PreferenceField>>;

export const PREFERENCE_FIELDS = [
  'userName',
  'agentName',
  'language',
  'tone',
  'length',
  'format',
  'formality',
  'emoji',
  'customInstructions',
] as const satisfies readonly PreferenceField[];

/** True when at least one preference is set (a record whose fields were all cleared is "nothing"). */
export function hasAnyPreference(record: UserPreferences): boolean {
  return PREFERENCE_FIELDS.some((f) => record[f] !== null);
}
