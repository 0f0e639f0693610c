// Area A's change feed and webhook subscriptions over HTTP: thin handlers over the services. The
// pipeline has already authenticated the operation (401/403) and validated its parameters and bodies.
import { SENT, type Handlers, type OperationsTagged } from '../../platform/http/handlers.ts';
import { sendCreation } from '../routes.ts';
import type { EventService } from './events.service.ts';
import type { WebhookService } from './webhooks.service.ts';

export interface EventRouteDeps {
  events: EventService;
  webhooks: WebhookService;
}

export function eventHandlers(deps: EventRouteDeps) {
  return {
    listEvents: async ({ query, principal }) => ({
      status: 200,
      body: await deps.events.list(principal.did, { after: query.after, limit: query.limit, types: query.types }),
    }),
    createWebhook: async ({ body, headers, principal, res }) => {
      const answer = await deps.webhooks.createOnce(principal.did, body, headers['Idempotency-Key'] || undefined);
      sendCreation(res, answer, `/v1/webhooks/${answer.resourceId}`);
      return SENT;
    },
    listWebhooks: async ({ principal }) => ({ status: 200, body: await deps.webhooks.list(principal.did) }),
    getWebhook: async ({ path, principal }) => ({ status: 200, body: await deps.webhooks.get(principal.did, path.id) }),
    updateWebhook: async ({ path, body, principal }) => ({ status: 200, body: await deps.webhooks.update(principal.did, path.id, body) }),
    deleteWebhook: async ({ path, principal }) => {
      await deps.webhooks.delete(principal.did, path.id);
      return { status: 204, body: undefined };
    },
    listWebhookDeliveries: async ({ path, query, principal }) => ({ status: 200, body: await deps.webhooks.deliveries(principal.did, path.id, query.limit) }),
    redeliverWebhook: async ({ path, principal }) => ({ status: 202, body: await deps.webhooks.redeliver(principal.did, path.id, path.deliveryId) }),
  } satisfies Handlers<OperationsTagged<'events'>>;
}
