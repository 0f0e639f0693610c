// Area A's change feed and webhook subscriptions over HTTP: thin handlers over the services. The
// pipeline has already authenticated the operation (401/403) and validated its parameters and bodies.
import type { Router } from 'express';
import type { EventType, WebhookCreateRequest, WebhookUpdateRequest } from '../../../generated/openapi/types.gen.ts';
import { principalOf } from '../../platform/http/auth.ts';
import { caseSensitiveRouter } from '../../platform/http/scope.ts';
import { sendCreation } from '../routes.ts';
import type { EventService } from './events.service.ts';
import type { WebhookService } from './webhooks.service.ts';

export interface EventRouteDeps {
  events: EventService;
  webhooks: WebhookService;
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
  router.post('/v1/webhooks', async (req, res) => {
    const answer = await deps.webhooks.createOnce(principalOf(req).did, req.body as WebhookCreateRequest, req.get('Idempotency-Key') || undefined);
    sendCreation(res, answer, `/v1/webhooks/${answer.resourceId}`);
  });
  router.get('/v1/webhooks', async (req, res) => {
    res.json(await deps.webhooks.list(principalOf(req).did));
  });
  router.get('/v1/webhooks/:id', async (req, res) => {
    res.json(await deps.webhooks.get(principalOf(req).did, req.params.id));
  });
  router.patch('/v1/webhooks/:id', async (req, res) => {
    res.json(await deps.webhooks.update(principalOf(req).did, req.params.id, req.body as WebhookUpdateRequest));
  });
  router.delete('/v1/webhooks/:id', async (req, res) => {
    await deps.webhooks.delete(principalOf(req).did, req.params.id);
    res.status(204).end();
  });
  router.get('/v1/webhooks/:id/deliveries', async (req, res) => {
    res.json(await deps.webhooks.deliveries(principalOf(req).did, req.params.id, int(req.query.limit)));
  });
  router.post('/v1/webhooks/:id/deliveries/:deliveryId/redeliver', async (req, res) => {
    res.status(202).json(await deps.webhooks.redeliver(principalOf(req).did, req.params.id, req.params.deliveryId));
  });
  return router;
}
