// The rules of the user-preferences plugin: field-wise merge, null (or a blank text) clears, an
// empty call writes nothing. Arguments reach set() already validated against the tool's schema.
import type { Db } from '../../../platform/db/index.ts';
import { hasAnyPreference, PREFERENCE_FIELDS, type PreferencesPatch, type UserPreferences } from './record.ts';
import { UserPreferencesRepository } from './repository.ts';

export class UserPreferencesService {
  private readonly repository: UserPreferencesRepository;

  constructor(db: Db, private readonly now: () => Date = () => new Date()) {
    this.repository = new UserPreferencesRepository(db);
  }

  /** The record, or null when nothing is set for this user and room. */
  async get(userDid: string, roomId: string): Promise<UserPreferences | null> {
    const record = await this.repository.find(userDid, roomId);
    return record && hasAnyPreference(record) ? record : null;
  }

  /**
   * Merges the given fields into the stored record and returns the merged record, or null when
   * nothing is set after it (as get() answers). A blank text (empty or only spaces) says nothing,
   * so it clears its field like null: a field is either set, and shown in the prompt, or not.
   */
  async set(userDid: string, roomId: string, patch: PreferencesPatch): Promise<UserPreferences | null> {
    if (!PREFERENCE_FIELDS.some((f) => patch[f] !== undefined)) return this.get(userDid, roomId);
    const cleared = Object.fromEntries(Object.entries(patch).map(([f, v]) => [f, typeof v === 'string' && v.trim() === '' ? null : v])) as PreferencesPatch;
    const merged = await this.repository.mergeFields(userDid, roomId, cleared, this.now().toISOString());
    return hasAnyPreference(merged) ? merged : null;
  }
}
