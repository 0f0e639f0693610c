// Webhook delivery across real server processes on one database: an instance killed (SIGKILL)
// while a receiver holds its request open loses no event (another instance sends it once the
// lease expires), and two instances deliver every event at least once.
import { expect } from 'chai';
import { inTransaction } from '../../src/platform/db/sql.ts';
import { openEventWrites, recordEvents } from '../../src/twins/events/events.repository.ts';
import { drawPublished } from '../../src/twins/events/events.ts';
import { WebhookRepository } from '../../src/twins/events/webhooks.repository.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.ts';
import { PARTNER_DID } from './fixtures.ts';
import { startReceiver, type Receiver } from './webhook-receiver.ts';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const ENV = { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', WEBHOOK_POLL_MS: '50', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_RETRY_BASE_MS: '200' };

forEachDatabase('webhooks across processes', (t) => {
  let receiver: Receiver;
  const processes: ServerProcess[] = [];
  let subscription = 0;

  beforeEach(async () => {
    receiver = await startReceiver();
    receiver.secret = SECRET;
    // Made just now: it takes events from now on (earlier tests' events are not its).
    const at = new Date().toISOString();
    await new WebhookRepository(t.db).insert({ id: `whk_${String(++subscription).padStart(32, '0')}`, principal: PARTNER_DID, url: receiver.url, eventTypes: ['draw.published'], secret: SECRET, at });
  });
  afterEach(async () => {
    for (const p of processes.splice(0)) await p.kill('SIGKILL');
    await new WebhookRepository(t.db).delete(`whk_${String(subscription).padStart(32, '0')}`);
    await receiver.close();
  });

  /** Writes one event as a change's transaction does; its draw id. */
  async function publish(n: number): Promise<string> {
    const drawId = `drw_${String(n).padStart(32, '0')}`;
    await inTransaction(t.db, async (sql) => {
      await openEventWrites(sql);
      await recordEvents(sql, [drawPublished(drawId, 'default', PARTNER_DID)], new Date().toISOString());
    });
    return drawId;
  }

  /** Resolves once the receiver has had every draw in `drawIds`. */
  async function receivedAll(drawIds: string[]): Promise<void> {
    const seen = () => new Set(receiver.received.map((r) => (r.event.data as { drawId: string }).drawId));
    while (!drawIds.every((d) => seen().has(d))) await receiver.next();
  }

  it('an instance killed with SIGKILL mid-delivery loses no event: another instance sends it after the lease', async function () {
    this.timeout(90_000);
    receiver.answers.push('hold');
    const first = receiver.next();
    const drawId = await publish(1);
    processes.push(await startServerProcess(t, ENV));
    const held = await first;
    await processes[0]!.kill('SIGKILL');
    const again = receiver.next();
    processes.push(await startServerProcess(t, ENV));
    const sent = await again;
    expect(sent.id, 'the same event, the same webhook-id').to.equal(held.id);
    expect((sent.event.data as { drawId: string }).drawId).to.equal(drawId);
    expect(receiver.forged).to.equal(0);
  });

  it('two instances on one database deliver every event at least once', async function () {
    this.timeout(90_000);
    processes.push(await startServerProcess(t, ENV), await startServerProcess(t, ENV));
    const drawIds = await Promise.all(Array.from({ length: 40 }, (_, i) => publish(100 + i)));
    await receivedAll(drawIds);
    expect(receiver.forged).to.equal(0);
    const ids = new Set(receiver.received.map((r) => r.id));
    expect(ids.size).to.equal(drawIds.length);
  });
});
