// Webhook subscriptions and their delivery: signed per Standard Webhooks (checked by the
// standardwebhooks library in the receiver), retried with exponential backoff on a clock the
// test moves, logged, redelivered by hand, disabled after failures in a row, and never sent to a
// non-public address unless the operator allows its network.
import { expect } from 'chai';
import type { LookupAddress } from 'node:dns';
import { createWebhook, deleteWebhook, getWebhook, listEvents, listWebhookDeliveries, listWebhooks, redeliverWebhook, submitClaim, updateWebhook } from '../../generated/openapi/sdk.gen.ts';
import type { EventType, Webhook, WebhookDelivery } from '../../generated/openapi/types.gen.ts';
import { configWith } from '../../src/config.ts';
import { createLogger } from '../../src/platform/logging.ts';
import { NetworkGuard } from '../../src/twins/events/network-guard.ts';
import { retryDelayMs, WebhookDispatcher } from '../../src/twins/events/webhook-dispatcher.ts';
import { WebhookRepository } from '../../src/twins/events/webhooks.repository.ts';
import { expectContractResponse } from '../helpers/contract.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { kptClaim, PARTNER_DID, startTwinsHarness, type TwinsHarness } from './fixtures.ts';
import { startReceiver, type Receiver } from './webhook-receiver.ts';

const LOOPBACK = ['127.0.0.0/8'];
const BASE_MS = 1000;
const MAX_ATTEMPTS = 4;
const MAX_FAILURES = 3;

forEachDatabase('webhooks', (t) => {
  let h: TwinsHarness;
  let clock: Date;
  let receiver: Receiver;
  let subscription: Webhook;
  const logger = createLogger(configWith({}));
  const dispatcher = (guard = new NetworkGuard(LOOPBACK), maxConsecutiveFailures = MAX_FAILURES) =>
    new WebhookDispatcher(t.db, { pollMs: 0, timeoutMs: 2000, retryBaseMs: BASE_MS, retryMaxMs: 4 * BASE_MS, maxAttempts: MAX_ATTEMPTS, maxConsecutiveFailures, guard, logger, now: () => clock });
  const advance = (ms: number) => (clock = new Date(clock.getTime() + ms));

  before(async () => {
    h = await startTwinsHarness(t.db, { WEBHOOK_POLL_MS: '0', WEBHOOK_ALLOWED_NETWORKS: LOOPBACK.join(',') });
  });
  after(() => h.server.stop());
  beforeEach(async () => {
    clock = new Date();
    receiver = await startReceiver();
    subscription = await subscribe(receiver, ['claim.created']);
  });
  afterEach(async () => {
    await deleteWebhook({ client: h.server.client, auth: h.key, path: { id: subscription.id } });
    await receiver.close();
  });

  async function subscribe(r: Receiver, eventTypes: EventType[], key = h.key): Promise<Webhook> {
    const created = await createWebhook({ client: h.server.client, auth: key, body: { url: r.url, eventTypes } });
    expect(created.response.status, JSON.stringify(created.error)).to.equal(201);
    expectContractResponse('post', '/v1/webhooks', { status: 201, headers: created.response.headers, body: created.data });
    expect(created.response.headers.get('location')).to.equal(`/v1/webhooks/${created.data!.id}`);
    r.secret = created.data!.secret;
    const { secret: _secret, ...webhook } = created.data!;
    return webhook;
  }
  const claim = async () => (await submitClaim({ client: h.server.client, auth: h.key, body: kptClaim() })).data!;
  const deliveries = async (id = subscription.id): Promise<WebhookDelivery[]> => {
    const r = await listWebhookDeliveries({ client: h.server.client, auth: h.key, path: { id } });
    expectContractResponse('get', '/v1/webhooks/{id}/deliveries', { status: r.response.status, headers: r.response.headers, body: r.data });
    return r.data!.items;
  };
  const webhook = async (id = subscription.id) => {
    const r = await getWebhook({ client: h.server.client, auth: h.key, path: { id } });
    expectContractResponse('get', '/v1/webhooks/{id}', { status: r.response.status, headers: r.response.headers, body: r.data });
    return r.data!;
  };

  it('sends each event signed (webhook-id, webhook-timestamp, webhook-signature), with the id the feed gives it', async () => {
    expect(subscription.id).to.match(/^whk_[0-9a-f]{32}$/);
    expect(receiver.secret).to.match(/^whsec_[A-Za-z0-9+/=]+$/);
    const submitted = await claim();
    await dispatcher().runOnce();
    expect(receiver.forged).to.equal(0);
    expect(receiver.received).to.have.length(1);
    const [got] = receiver.received;
    expect(got!.event.type).to.equal('claim.created');
    expect(got!.event.data).to.include({ claimId: submitted.id, submittedBy: PARTNER_DID });
    const fed = (await listEvents({ client: h.server.client, auth: h.key, query: { types: ['claim.created'], limit: 200 } })).data!.items.find((e) => (e.data as { claimId: string }).claimId === submitted.id);
    expect(got!.id).to.equal(fed!.id);
    expect(got!.event).to.deep.equal(fed);
    const [logged] = await deliveries();
    expect(logged).to.include({ eventId: fed!.id, eventType: 'claim.created', status: 'succeeded', attempts: 1, responseStatus: 200 });
    // Sent once: nothing is due any more.
    await dispatcher().runOnce();
    expect(receiver.received).to.have.length(1);
  });

  it('a receiver given a forged secret refuses every request (the signature is checked)', async () => {
    receiver.secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    await claim();
    await dispatcher().runOnce();
    expect(receiver.forged).to.equal(1);
    expect(receiver.received).to.have.length(0);
  });

  it('retries a failed delivery after base · 2^(n−1), and gives it up after WEBHOOK_MAX_ATTEMPTS', async () => {
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, BASE_MS, 4 * BASE_MS))).to.deep.equal([1000, 2000, 4000, 4000, 4000]);
    receiver.answers.push(500, 503, 404);
    await claim();
    const d = dispatcher(undefined, 100);
    await d.runOnce();
    let [logged] = await deliveries();
    expect(logged).to.include({ status: 'pending', attempts: 1, responseStatus: 500 });
    expect(logged!.nextAttemptAt).to.equal(new Date(clock.getTime() + BASE_MS).toISOString());
    advance(BASE_MS - 1);
    expect(await d.runOnce(), 'not due yet').to.equal(0);
    advance(1);
    expect(await d.runOnce()).to.equal(1);
    [logged] = await deliveries();
    expect(logged).to.include({ status: 'pending', attempts: 2, responseStatus: 503 });
    expect(logged!.nextAttemptAt).to.equal(new Date(clock.getTime() + 2 * BASE_MS).toISOString());
    advance(2 * BASE_MS);
    await d.runOnce();
    advance(4 * BASE_MS);
    await d.runOnce();
    [logged] = await deliveries();
    expect(logged).to.include({ status: 'succeeded', attempts: 4, responseStatus: 200 });
    expect(receiver.received.map((r) => r.id)).to.deep.equal(Array(4).fill(logged!.eventId));

    receiver.answers.push(500, 500, 500, 500);
    await claim();
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      await d.runOnce();
      advance(4 * BASE_MS);
    }
    [logged] = await deliveries();
    expect(logged).to.include({ status: 'failed', attempts: MAX_ATTEMPTS });
    expect(logged).not.to.have.property('nextAttemptAt');
    advance(3600_000);
    expect(await d.runOnce(), 'given up').to.equal(0);
  });

  it('is disabled after WEBHOOK_MAX_CONSECUTIVE_FAILURES failures in a row, and enabled again by its owner', async () => {
    receiver.answers.push(500, 500, 500);
    for (let i = 0; i < MAX_FAILURES; i++) await claim();
    const d = dispatcher();
    await d.runOnce();
    const disabled = await webhook();
    expect(disabled).to.include({ enabled: false, consecutiveFailures: MAX_FAILURES });
    expect(disabled.disabledReason).to.match(/disabled after 3 consecutive failed deliveries/);
    // Nothing more is sent to it, not even what happens meanwhile.
    await claim();
    advance(3600_000);
    expect(await d.runOnce()).to.equal(0);
    expect(receiver.received).to.have.length(MAX_FAILURES);
    // Redelivery waits for it to be enabled.
    const refused = await redeliverWebhook({ client: h.server.client, auth: h.key, path: { id: subscription.id, deliveryId: (await deliveries())[0]!.id } });
    expect(refused.response.status).to.equal(409);
    expectContractResponse('post', '/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver', { status: 409, headers: refused.response.headers, body: refused.error });
    const enabled = await updateWebhook({ client: h.server.client, auth: h.key, path: { id: subscription.id }, body: { enabled: true } });
    expect(enabled.data).to.include({ enabled: true, consecutiveFailures: 0 });
    expect(enabled.data).not.to.have.property('disabledReason');
    await d.runOnce();
    expect(receiver.received).to.have.length(2 * MAX_FAILURES + 1);
    expect((await deliveries()).map((x) => x.status)).to.deep.equal(Array(MAX_FAILURES + 1).fill('succeeded'));
  });

  it('a success resets the run of failures', async () => {
    receiver.answers.push(500, 500);
    await claim();
    await claim();
    const d = dispatcher();
    await d.runOnce();
    expect((await webhook()).consecutiveFailures).to.equal(2);
    advance(BASE_MS);
    await d.runOnce();
    expect(await webhook()).to.include({ enabled: true, consecutiveFailures: 0 });
  });

  it('redelivers a delivery by hand, with the same event id', async () => {
    await claim();
    const d = dispatcher();
    await d.runOnce();
    const [sent] = await deliveries();
    const again = await redeliverWebhook({ client: h.server.client, auth: h.key, path: { id: subscription.id, deliveryId: sent!.id } });
    expect(again.response.status).to.equal(202);
    expectContractResponse('post', '/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver', { status: 202, headers: again.response.headers, body: again.data });
    expect(again.data).to.include({ id: sent!.id, status: 'pending' });
    // Due at the server's time, which the test's clock has not reached yet.
    advance(60_000);
    await d.runOnce();
    expect(receiver.received.map((r) => r.id)).to.deep.equal([sent!.eventId, sent!.eventId]);
    expect((await deliveries())[0]).to.include({ status: 'succeeded', attempts: 2 });
    const unknown = await redeliverWebhook({ client: h.server.client, auth: h.key, path: { id: subscription.id, deliveryId: `dlv_${'0'.repeat(32)}` } });
    expect(unknown.response.status).to.equal(404);
  });

  it('sends a principal only its own events and the types it asked for; another principal cannot see or change the subscription', async () => {
    const other = await startReceiver();
    try {
      const others = await subscribe(other, ['claim.created'], h.otherKey);
      const verifiedOnly = await updateWebhook({ client: h.server.client, auth: h.key, path: { id: subscription.id }, body: { eventTypes: ['claim.verified'] } });
      expect(verifiedOnly.data!.eventTypes).to.deep.equal(['claim.verified']);
      await claim();
      await dispatcher().runOnce();
      expect(other.received, "PARTNER_DID's claim in PARTNER_DID's campaign").to.have.length(0);
      expect(receiver.received, 'a pending claim is not verified').to.have.length(0);
      for (const call of [
        () => getWebhook({ client: h.server.client, auth: h.otherKey, path: { id: subscription.id } }),
        () => updateWebhook({ client: h.server.client, auth: h.otherKey, path: { id: subscription.id }, body: { enabled: false } }),
        () => listWebhookDeliveries({ client: h.server.client, auth: h.otherKey, path: { id: subscription.id } }),
        () => deleteWebhook({ client: h.server.client, auth: h.otherKey, path: { id: subscription.id } }),
      ]) expect((await call()).response.status).to.equal(404);
      const listed = (await listWebhooks({ client: h.server.client, auth: h.otherKey })).data!.items.map((w) => w.id);
      expect(listed).to.deep.equal([others.id]);
      expect(listed[0]).to.not.have.property('secret');
      expect((await deleteWebhook({ client: h.server.client, auth: h.otherKey, path: { id: others.id } })).response.status).to.equal(204);
      expect((await getWebhook({ client: h.server.client, auth: h.otherKey, path: { id: others.id } })).response.status).to.equal(404);
    } finally {
      await other.close();
    }
  });

  describe('non-public addresses (SSRF)', () => {
    let plain: TestServer;
    before(async () => {
      plain = await startTestServer(t.db, { WEBHOOK_POLL_MS: '0' });
    });
    after(() => plain.stop());

    const refusal = async (server: TestServer, url: string) => {
      const r = await createWebhook({ client: server.client, auth: h.key, body: { url, eventTypes: ['claim.created'] } });
      return { status: r.response.status, error: r.error as { type: string; errors?: { pointer: string; rule: string; message: string }[] } };
    };

    it('refuses at subscription a URL that is not http(s), or whose host is or resolves to a loopback, private, link-local or reserved address', async () => {
      for (const url of ['ftp://example.org/hook', 'file:///etc/passwd', 'http://user:pw@127.0.0.1/']) {
        const r = await refusal(h.server, url);
        expect(r.status, url).to.equal(400);
        expect(r.error.type, url).to.be.a('string');
        expect(r.error.errors![0]!.pointer, url).to.equal('/body/url');
      }
      for (const url of [
        'http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://10.1.2.3/', 'http://172.16.0.1/', 'http://192.168.1.1/',
        'http://169.254.169.254/latest/meta-data/', 'http://100.64.0.1/', 'http://0.0.0.0/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/',
        'http://[fd00::1]/', 'http://[fe80::1]/', 'http://2130706433/', 'http://0x7f.1/',
      ]) {
        const r = await refusal(plain, url);
        expect(r.status, url).to.equal(400);
        expect(r.error.errors![0], url).to.include({ pointer: '/body/url', rule: 'public-address' });
      }
    });

    it('permits public addresses of either family, and refuses the special-purpose ones of each', async () => {
      const guard = new NetworkGuard([]);
      for (const address of ['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '2a00:1450:4001:81b::200e']) {
        expect(guard.permits(address), address).to.equal(true);
      }
      for (const address of ['127.0.0.1', '10.0.0.1', '192.168.0.1', '0.0.0.0', '::1', '::', '::ffff:8.8.8.8', 'fe80::1', 'fd00::1', '2001:db8::1']) {
        expect(guard.permits(address), address).to.equal(false);
      }
      const resolving = new NetworkGuard([], (_host, _opts, cb: (err: null, a: LookupAddress[]) => void) => cb(null, [{ address: '8.8.4.4', family: 4 }, { address: '2001:4860:4860::8844', family: 6 }]));
      expect((await resolving.addressesOf('dns.example')).map((a) => a.address)).to.deep.equal(['8.8.4.4', '2001:4860:4860::8844']);
    });

    it('allows only the networks WEBHOOK_ALLOWED_NETWORKS names', async () => {
      expect((await refusal(h.server, 'http://[::1]:9/hook')).status).to.equal(400);
      expect((await refusal(h.server, 'http://10.0.0.1/hook')).status).to.equal(400);
      expect((await refusal(plain, receiver.url)).status).to.equal(400);
    });

    it('checks the address at connect time: a host that resolves to a non-public address later (DNS rebinding) is not reached', async () => {
      // Accepted while the name resolved to a public address; it now resolves to the receiver's.
      const rebinding = new NetworkGuard([], (_host, _opts, cb: (err: null, a: LookupAddress[]) => void) => cb(null, [{ address: '127.0.0.1', family: 4 }]));
      await new WebhookRepository(t.db).update(subscription.id, { url: `http://rebind.example:${receiver.port}/hook`, at: new Date().toISOString() });
      await claim();
      await dispatcher(rebinding).runOnce();
      expect(receiver.received).to.have.length(0);
      const [logged] = await deliveries();
      expect(logged).to.include({ status: 'pending', attempts: 1 });
      expect(logged!.error).to.match(/127\.0\.0\.1, which is not a public address/);
      // An address in the URL itself is checked too (no lookup happens for it).
      await new WebhookRepository(t.db).update(subscription.id, { url: receiver.url, at: new Date().toISOString() });
      advance(BASE_MS);
      await dispatcher(new NetworkGuard([])).runOnce();
      expect(receiver.received).to.have.length(0);
      expect((await deliveries())[0]!.error).to.match(/127\.0\.0\.1 is not a public address/);
    });
  });
});
