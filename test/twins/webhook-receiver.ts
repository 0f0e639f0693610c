// A webhook receiver for tests: a plain node http server on 127.0.0.1 that checks each request's
// signature with the standardwebhooks library itself (and with the SDK's verifyWebhook, as a
// partner would) and answers the statuses it is told to.
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '@hearth/sdk';
import type { Event } from '../../generated/openapi/types.gen.ts';

export interface Received {
  id: string;
  event: Event;
}

export interface Receiver {
  url: string;
  port: number;
  /** Requests whose signature verified, in arrival order. */
  received: Received[];
  /** Requests whose signature did not verify. */
  forged: number;
  /** The secret signatures are checked with (set once the subscription is made). */
  secret?: string;
  /** Statuses to answer, in order; after them 200. 'hold' keeps the request open. */
  answers: (number | 'hold')[];
  /** Resolves at the next verified request. */
  next(): Promise<Received>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const waiters: ((r: Received) => void)[] = [];
  const held: http.ServerResponse[] = [];
  const receiver = { received: [], forged: 0, answers: [] } as unknown as Receiver;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: Event;
      try {
        event = new Webhook(receiver.secret!).verify(body, req.headers as Record<string, string>) as Event;
        // A partner's check, with Hearth's SDK (IncomingHttpHeaders as they come): it must read the same event.
        if (JSON.stringify(verifyWebhook(body, req.headers, receiver.secret!)) !== JSON.stringify(event)) throw new Error('the SDK read another event');
      } catch {
        receiver.forged++;
        res.writeHead(400).end();
        return;
      }
      const r = { id: String(req.headers['webhook-id']), event };
      receiver.received.push(r);
      const answer = receiver.answers.shift() ?? 200;
      if (answer === 'hold') held.push(res);
      else res.writeHead(answer).end();
      waiters.splice(0).forEach((w) => w(r));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  Object.assign(receiver, {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    next: () => new Promise<Received>((resolve) => waiters.push(resolve)),
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  });
  return receiver;
}
