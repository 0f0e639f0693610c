import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { forEachDatabase } from '../helpers/databases.ts';
import { createAccount, GatewaySession, login, RecordingTwins, startUssdServer } from './helpers.ts';

/** Numbers a log line carries of the process and the connection, which may happen to spell a secret's digits (a port 46813). */
const MACHINE_NUMBERS = new Set(['time', 'pid', 'port', 'responseTime']);

/**
 * Identifiers drawn at random, by the service (request and trace ids) or by the gateway (session
 * ids, newSessionId), whose hex digits may happen to spell a secret's (a trace id ...80246...).
 * Only a whole value of that form is passed over: a secret written in any other value is found.
 */
const RANDOM_ID = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|ATUid_[0-9a-f]{16})$/;

/** Every key and value of the log lines as text, but for the process's and connection's numbers and random identifiers. */
function writtenValues(logs: string): string[] {
  const out: string[] = [];
  const walk = (value: unknown, key?: string): void => {
    if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        out.push(k);
        walk(v, k);
      }
    } else if (!(typeof value === 'number' && key !== undefined && MACHINE_NUMBERS.has(key)) && !(typeof value === 'string' && RANDOM_ID.test(value))) {
      out.push(String(value));
    }
  };
  for (const line of logs.split('\n').filter(Boolean)) walk(JSON.parse(line) as unknown);
  return out;
}

forEachDatabase('USSD logs', (t) => {
  it('carry masked phones and never a PIN, through account creation, wrong PINs and a PIN change', async () => {
    let logs = '';
    const logger = pino({ level: 'trace' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
    const server = await startUssdServer(t.db, {}, { twins: new RecordingTwins(), logger });
    try {
      const s = new GatewaySession([server.baseUrl], '+254798765432');
      const id = await createAccount(s, '35792');
      await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, '46813');
      const c = new GatewaySession([server.baseUrl], s.phoneNumber);
      await login(c, id, '35792');
      await c.walk('5', '35792', '80246', '80246');
      expect(logs).to.include('ussd account created');
      expect(logs).to.include('ussd wrong PIN');
      expect(logs).to.include('ussd PIN changed');
      expect(logs).to.include('+254*******32');
      const written = writtenValues(logs);
      for (const secret of ['35792', '46813', '80246', '798765432', 'Jane']) {
        expect(written.filter((v) => v.includes(secret)), secret).to.deep.equal([]);
      }
    } finally {
      await server.stop();
    }
  });
});
