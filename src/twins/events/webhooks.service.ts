// Webhook subscriptions of an API key's principal: made, changed, listed, deleted; their
// delivery log and redelivery. A URL must be http(s) and name a public address (NetworkGuard).
import { randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/index.ts';
import { inTransaction } from '../../platform/db/sql.ts';
import { conflictWith, invalidInput, notFoundError } from '../../platform/domain-errors.ts';
import type { Webhook, WebhookCreateRequest, WebhookDelivery, WebhookList, WebhookUpdateRequest, WebhookWithSecret } from '../../../generated/openapi/types.gen.ts';
import { CreationIdempotency, type CreationAnswer } from '../idempotency.ts';
import { NetworkGuard } from './network-guard.ts';
import { WebhookRepository, type Subscription } from './webhooks.repository.ts';

const view = ({ principal: _p, secret: _s, ...webhook }: Subscription): Webhook => webhook;

export class WebhookService {
  private readonly repo: WebhookRepository;
  private readonly idempotency: CreationIdempotency;

  constructor(
    private readonly db: Db,
    private readonly guard: NetworkGuard,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.repo = new WebhookRepository(db);
    this.idempotency = new CreationIdempotency(db, now);
  }

  /**
   * A new subscription, with its signing secret (answered this once, and to a retry with the
   * first request's Idempotency-Key: the answer that was lost is the one holding the secret).
   * 400 for a URL refused.
   */
  async createOnce(principal: string, input: WebhookCreateRequest, idempotencyKey: string | undefined): Promise<CreationAnswer> {
    const url = await this.checkedUrl(input.url);
    return this.idempotency.run(
      idempotencyKey === undefined ? undefined : { principalDid: principal, operation: 'createWebhook', key: idempotencyKey, body: input },
      (bind) =>
        inTransaction(this.db, async (sql) => {
          const id = `whk_${randomUUID().replaceAll('-', '')}`;
          const secret = `whsec_${randomBytes(32).toString('base64')}`;
          const repo = new WebhookRepository(sql);
          await repo.insert({ id, principal, url, eventTypes: input.eventTypes, secret, at: this.now().toISOString() });
          const created: WebhookWithSecret = { ...view((await repo.find(principal, id))!), secret };
          const answer = { resourceId: id, json: JSON.stringify(created) };
          await bind?.(sql, answer);
          return answer;
        }),
      async (id) => JSON.stringify(await this.get(principal, id)),
    );
  }

  async list(principal: string): Promise<WebhookList> {
    return { items: (await this.repo.list(principal)).map(view) };
  }

  /** 404 for another principal's subscription, as for none. */
  async get(principal: string, id: string): Promise<Webhook> {
    return view(await this.owned(principal, id));
  }

  async update(principal: string, id: string, input: WebhookUpdateRequest): Promise<Webhook> {
    await this.owned(principal, id);
    const url = input.url === undefined ? undefined : await this.checkedUrl(input.url);
    await this.repo.update(id, { url, eventTypes: input.eventTypes, enabled: input.enabled, at: this.now().toISOString() });
    return this.get(principal, id);
  }

  async delete(principal: string, id: string): Promise<void> {
    await this.owned(principal, id);
    await this.repo.delete(id);
  }

  async deliveries(principal: string, id: string, limit = 50): Promise<{ items: WebhookDelivery[] }> {
    await this.owned(principal, id);
    return { items: await this.repo.deliveries(id, limit) };
  }

  /** Sends a delivery again as soon as a dispatcher looks; 409 while the subscription is disabled. */
  async redeliver(principal: string, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const subscription = await this.owned(principal, id);
    if (!(await this.repo.delivery(id, deliveryId))) throw notFoundError(`No delivery ${deliveryId} of webhook ${id}.`);
    if (!subscription.enabled) throw conflictWith(`Webhook ${id} is disabled; enable it (PATCH {"enabled": true}) to redeliver.`, [], 'webhook-disabled');
    await this.repo.redeliver(deliveryId, this.now().toISOString());
    return (await this.repo.delivery(id, deliveryId))!;
  }

  private async owned(principal: string, id: string): Promise<Subscription> {
    const found = await this.repo.find(principal, id);
    if (!found) throw notFoundError(`No webhook ${id}.`);
    return found;
  }

  /** The URL as it will be called: http(s), no credentials, a host resolving to permitted addresses only. */
  private async checkedUrl(raw: string): Promise<string> {
    const refuse = (message: string, rule: string) => invalidInput('The webhook URL is refused', [{ path: ['url'], message, rule }]);
    const url = URL.parse(raw);
    if (!url) throw refuse('is not a URL', 'url');
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse(`must be an http or https URL (not ${url.protocol})`, 'http-url');
    if (url.username || url.password) throw refuse('must not hold a user name or password', 'no-credentials');
    const host = NetworkGuard.literalOf(url) ?? url.hostname;
    try {
      await this.guard.addressesOf(host);
    } catch (err) {
      throw refuse(err instanceof Error && err.name === 'NonPublicAddressError' ? `must name a public address: ${err.message}` : `names a host that does not resolve (${url.hostname})`, 'public-address');
    }
    return url.href;
  }
}
