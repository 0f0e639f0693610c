// Area A's change feed and webhook subscriptions over HTTP: thin handlers over the services. The
// OpenAPI validator has already checked auth (401/403), parameters and bodies.
import type { Router } from 'express';
import type { EventType } from '../../../generated/openapi/types.gen.ts';
import { principalOf } from '../../platform/http/auth.ts';
import { caseSensitiveRouter } from '../../platform/http/scope.ts';
import type { EventService } from './events.service.ts';

export interface EventRouteDeps {
  events: EventService;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const int = (v: unknown) => (v === undefined ? undefined : Number(v));
/** A comma-separated list (style form, explode false), as the validator leaves it. */
const listOf = (v: unknown) => (Array.isArray(v) ? v.map(String) : typeof v === 'string' ? v.split(',') : undefined);

export function eventsRouter(deps: EventRouteDeps): Router {
  const router = caseSensitiveRouter();
  router.get('/v1/events', async (req, res) => {
    const q = req.query;
    res.json(await deps.events.list(principalOf(req).did, { after: str(q.after), limit: int(q.limit), types: listOf(q.types) as EventType[] | undefined }));
  });
  return router;
}
