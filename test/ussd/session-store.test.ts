// The session store on a real database: a duplicate hop waits for the hop it duplicates, by its
// end on this instance or by reading the row again (after growing pauses) on another. The pauses
// are test doubles: nothing here waits on a clock.
import { expect } from 'chai';
import { badRequest } from '../../src/platform/http/errors.ts';
import { SessionBusyError, SessionMismatchError } from '../../src/ussd/errors.ts';
import type { Session } from '../../src/ussd/model.ts';
import { PinCipher } from '../../src/ussd/pin.ts';
import { UssdRepository } from '../../src/ussd/repository.ts';
import { httpErrorOf } from '../../src/ussd/routes.ts';
import { SessionStore, type HopOutcome } from '../../src/ussd/session-store.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { newSessionId } from './helpers.ts';

const pins = new PinCipher(Buffer.alloc(32, 3));
const now = new Date('2026-03-02T08:00:00Z');
const outcome: HopOutcome = { snapshot: '{"value":"knowMore","context":{}}', state: 'knowMore', isAuthenticated: false, language: 'en', reply: 'CON Know More', done: false };

forEachDatabase('USSD session store', (t) => {
  const storeWith = (pause: (ms: number) => Promise<unknown>) => new SessionStore(new UssdRepository(t.db), { pins, idleSeconds: 180, pause });
  const never = () => new Promise<never>(() => undefined);

  async function newSession(store: SessionStore): Promise<Session> {
    const s: Session = {
      id: newSessionId(), phoneNumber: '+254712345678', serviceCode: '*384*1234#', snapshot: '{}', state: 'preMenu', isAuthenticated: false,
      lastText: store.markOf(''), lastReply: 'CON Welcome', status: 'active', version: 1,
      createdAt: now.toISOString(), updatedAt: now.toISOString(), expiresAt: store.expiry(now), networkCode: null,
    };
    expect(await store.insert(s)).to.equal(true);
    return s;
  }

  it('a duplicate of a hop this instance is running gets its reply when that hop ends, not after a pause', async () => {
    const store = storeWith(never);
    const s = await newSession(store);
    const mark = store.markOf('1');
    const lease = store.lease(s, mark, now);
    expect(await lease.take()).to.equal(true);
    const leased = (await store.find(s.id))!;
    expect(leased.lastReply).to.equal(null);
    const duplicate = store.awaitReply(leased);
    expect(await store.saveHop(s, lease.version, mark, outcome, now)).to.equal(true);
    lease.end();
    expect((await duplicate)?.lastReply).to.equal('CON Know More');
  });

  it("another instance's hop is read again after growing pauses until it has replied", async () => {
    const other = storeWith(never);
    const s = await newSession(other);
    const mark = other.markOf('1');
    const lease = other.lease(s, mark, now);
    await lease.take();
    const pauses: number[] = [];
    const store = storeWith(async (ms) => {
      pauses.push(ms);
      if (pauses.length === 5) await other.saveHop(s, lease.version, mark, outcome, now);
    });
    const current = await store.awaitReply((await store.find(s.id))!);
    expect(current?.lastReply).to.equal('CON Know More');
    expect(pauses).to.deep.equal([20, 40, 80, 160, 320]);
  });

  it('a write that finds another version changes nothing and says so', async () => {
    const store = storeWith(never);
    const s = await newSession(store);
    expect(await store.saveHop({ ...s }, s.version + 1, store.markOf('1'), outcome, now)).to.equal(false);
    expect(await store.insert(s)).to.equal(false);
    expect(await store.find(s.id)).to.deep.equal(s);
    const lease = store.lease(s, store.markOf('1'), now);
    expect(await lease.take()).to.equal(true);
    expect(await store.lease(s, store.markOf('2'), now).take()).to.equal(false);
    lease.end();
  });
});

describe('USSD errors at the HTTP edge', () => {
  it('a session of another phone or service code is a 400 naming the request field; a busy session a 503', () => {
    for (const field of ['phoneNumber', 'serviceCode'] as const) {
      expect(httpErrorOf(new SessionMismatchError(field))).to.deep.include({ status: 400, errors: [{ pointer: `/body/${field}`, message: "is not the session's" }] });
    }
    expect(httpErrorOf(new SessionBusyError('session busy'))).to.deep.include({ status: 503, detail: 'session busy' });
    const other = badRequest('x');
    expect(httpErrorOf(other)).to.equal(other);
  });
});
