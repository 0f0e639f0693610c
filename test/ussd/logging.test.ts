import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { forEachDatabase } from '../helpers/databases.ts';
import { createAccount, GatewaySession, login, RecordingTwins, startUssdServer } from './helpers.ts';

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
      for (const secret of ['35792', '46813', '80246', '798765432', 'Jane']) expect(logs, secret).to.not.include(secret);
    } finally {
      await server.stop();
    }
  });
});
