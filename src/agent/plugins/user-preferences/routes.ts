// GET /user-preferences: the client-side read. Writes go through the set_user_preferences tool.
import type { Router } from 'express';
import type { GetUserPreferencesData } from '../../../../generated/openapi/types.gen.ts';
import { principalOf } from '../../../platform/http/auth.ts';
import { DEFAULT_ROOM_ID } from '../../runtime/plugin.ts';
import type { UserPreferencesService } from './service.ts';
import { caseSensitiveRouter } from '../../../platform/http/scope.ts';

export const USER_PREFERENCES_PATH = '/user-preferences';

export function userPreferencesRouter(service: UserPreferencesService): Router {
  const router = caseSensitiveRouter();
  router.get(USER_PREFERENCES_PATH, async (req, res) => {
    const query = req.query as NonNullable<GetUserPreferencesData['query']>;
    const record = await service.get(principalOf(req).did, query.roomId ?? DEFAULT_ROOM_ID);
    // A real JSON body even when nothing is set: the literal null.
    res.set('Cache-Control', 'private, no-store').type('application/json').send(JSON.stringify(record));
  });
  return router;
}
