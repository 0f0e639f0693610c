// GET /user-preferences: the client-side read. Writes go through the set_user_preferences tool.
import type { Handlers, OperationsTagged } from '../../../platform/http/handlers.ts';
import { DEFAULT_ROOM_ID } from '../../runtime/plugin.ts';
import type { UserPreferencesService } from './service.ts';

export const USER_PREFERENCES_PATH = '/user-preferences';

export function userPreferencesHandlers(service: UserPreferencesService) {
  return {
    // A real JSON body even when nothing is set: the literal null.
    getUserPreferences: async ({ query, principal }) => ({
      status: 200,
      body: await service.get(principal.did, query.roomId ?? DEFAULT_ROOM_ID),
      headers: { 'Cache-Control': 'private, no-store' },
    }),
  } satisfies Handlers<OperationsTagged<'user-preferences'>>;
}
