import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createDb } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { pino } from 'pino';
import { configWith } from '../../src/config.ts';
import { resetUssdPin, unlockUssdAccount } from '../../src/ussd/index.ts';
import { PinCipher, pinProblem, resolvePinKey } from '../../src/ussd/pin.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createAccount, GatewaySession, login, RecordingTwins, startUssdServer } from './helpers.ts';

forEachDatabase('USSD account unlock (operator)', (t) => {
  it('unlocks an account locked after 3 wrong PINs; the right PIN then logs in', async () => {
    const server = await startUssdServer(t.db, {}, { twins: new RecordingTwins() });
    try {
      const s = new GatewaySession([server.baseUrl]);
      const id = await createAccount(s, '86429');
      for (const wrong of ['11112', '11113', '11114']) await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, wrong);
      expect(await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, '86429')).to.match(/^END Your account is locked/);
      expect(await unlockUssdAccount(t.db, id)).to.equal('unlocked');
      const row = (await t.db('ussd_accounts').where('customer_id', id).first())!;
      expect(row.locked_at).to.equal(null);
      expect(row.failed_pin_attempts).to.equal(0);
      expect(await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, '86429')).to.match(/^CON Welcome, Jane/);
      expect(await unlockUssdAccount(t.db, id)).to.equal('not locked');
      expect(await unlockUssdAccount(t.db, '00000001')).to.equal('not found');

      // Forgotten PIN: locked again, then a new PIN from the operator logs in, and the old one does not.
      for (const wrong of ['11112', '11113', '11114']) await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, wrong);
      const reset = await resetUssdPin(t.db, server.config, pino({ level: 'silent' }), id);
      expect(reset).to.have.property('pin').that.matches(/^\d{5}$/);
      const { pin } = reset as { pin: string };
      if (pin !== '86429') expect(await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, '86429')).to.match(/^CON Wrong PIN/);
      expect(await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, pin)).to.match(/^CON Welcome, Jane/);
      expect(await resetUssdPin(t.db, server.config, pino({ level: 'silent' }), '00000001')).to.equal('not found');
    } finally {
      await server.stop();
    }
  });
});

describe('tsx src/main.ts ussd-unlock', () => {
  const run = (args: string[], dir: string, env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'ussd-unlock', ...args], {
        env: { ...process.env, DATA_DIR: dir, DATABASE_URL: `sqlite:${join(dir, 'hearth.sqlite')}`, LOG_LEVEL: 'silent', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (err += c));
      child.on('close', (code) => resolve({ code, out, err }));
    });

  it('unlocks a locked account by Customer ID; unknown ids and missing arguments exit 1', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(join(tmpdir(), 'hearth-unlock-'));
    const db = createDb({ url: `sqlite:${join(dir, 'hearth.sqlite')}`, dataDir: dir, poolMax: 1 });
    try {
      await migrateLatest(db);
      // The key the server generated into its data folder, and a PIN sealed with it.
      const serverPins = new PinCipher(resolvePinKey(configWith({ DATA_DIR: dir }), pino({ level: 'silent' })));
      const now = new Date().toISOString();
      await db('ussd_accounts').insert({
        id: 'a'.repeat(32), customer_id: '12345678', phone_number: '+254700000009', name: 'Jane Doe', village: null, test_group: 'reference',
        household_did: 'did:ixo:entity:0123456789abcdef0123456789abcdef', pin_encrypted: serverPins.seal('86429'), failed_pin_attempts: 3, locked_at: now, created_at: now, updated_at: now,
      });
      const ok = await run(['12345678'], dir);
      expect(ok.code, ok.err).to.equal(0);
      expect(ok.out).to.equal('Unlocked Customer ID 12345678.\n');
      const row = (await db('ussd_accounts').where('customer_id', '12345678').first())!;
      expect([row.locked_at, row.failed_pin_attempts]).to.deep.equal([null, 0]);
      const unknown = await run(['99999999'], dir);
      expect(unknown.code).to.equal(1);
      expect(unknown.err).to.include('No USSD account with Customer ID 99999999.');
      const missing = await run([], dir);
      expect(missing.code).to.equal(1);
      expect(missing.err).to.include('ussd-unlock takes one Customer ID');
      const unknownOption = await run(['12345678', '--pin'], dir);
      expect(unknownOption.code).to.equal(1);
      expect(unknownOption.err).to.match(/^Unknown option '--pin'/).and.include('Usage').and.not.include('    at ');

      // Sealing with another key than the server's would give a PIN that never opens: refused.
      const otherKey = await run(['12345678', '--new-pin'], dir, { PIN_ENCRYPTION_KEY: 'ab'.repeat(32) });
      expect(otherKey.code).to.equal(1);
      expect(otherKey.err).to.match(/^Invalid configuration:\n {2}PIN_ENCRYPTION_KEY: does not open the PINs already stored/);
      const elsewhere = mkdtempSync(join(tmpdir(), 'hearth-unlock-elsewhere-'));
      const noKey = await run(['12345678', '--new-pin'], elsewhere, { DATABASE_URL: `sqlite:${join(dir, 'hearth.sqlite')}` });
      rmSync(elsewhere, { recursive: true, force: true });
      expect(noKey.code).to.equal(1);
      expect(noKey.err).to.include('PIN_ENCRYPTION_KEY: is not set and').and.include('does not exist');

      // A household that forgot its PIN: a new random one, for the operator to give in person.
      await db('ussd_accounts').update({ failed_pin_attempts: 3, locked_at: now }).where('customer_id', '12345678');
      const reset = await run(['12345678', '--new-pin'], dir);
      expect(reset.code, reset.err).to.equal(0);
      const pin = /with the new PIN (\d{5})\. Give it to the household in person/.exec(reset.out)?.[1];
      expect(pin, reset.out).to.be.a('string');
      expect(pinProblem(pin!)).to.equal(undefined);
      const after = (await db('ussd_accounts').where('customer_id', '12345678').first())!;
      expect([after.locked_at, after.failed_pin_attempts]).to.deep.equal([null, 0]);
      // Sealed under the data folder's PIN key, the one the server uses: it opens to the PIN printed.
      const cipher = new PinCipher(resolvePinKey(configWith({ DATA_DIR: dir }), pino({ level: 'silent' })));
      expect(cipher.matches(after.pin_encrypted, pin!)).to.equal(true);
      expect((await run(['99999999', '--new-pin'], dir)).err).to.include('No USSD account with Customer ID 99999999.');
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
