import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createDb } from '../../src/platform/db/index.ts';
import { migrateLatest } from '../../src/platform/db/migrate.ts';
import { unlockUssdAccount } from '../../src/ussd/index.ts';
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
      const row = await t.db.selectFrom('ussd_accounts').selectAll().where('customer_id', '=', id).executeTakeFirstOrThrow();
      expect(row.locked_at).to.equal(null);
      expect(row.failed_pin_attempts).to.equal(0);
      expect(await login(new GatewaySession([server.baseUrl], s.phoneNumber), id, '86429')).to.match(/^CON Welcome, Jane/);
      expect(await unlockUssdAccount(t.db, id)).to.equal('not locked');
      expect(await unlockUssdAccount(t.db, '00000001')).to.equal('not found');
    } finally {
      await server.stop();
    }
  });
});

describe('tsx src/main.ts ussd-unlock', () => {
  const run = (args: string[], dir: string) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'ussd-unlock', ...args], {
        env: { ...process.env, DATA_DIR: dir, DATABASE_URL: `sqlite:${join(dir, 'hearth.sqlite')}`, LOG_LEVEL: 'silent' },
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
      const now = new Date().toISOString();
      await db
        .insertInto('ussd_accounts')
        .values({
          id: 'a'.repeat(32), customer_id: '12345678', phone_number: '+254700000009', name: 'Jane Doe', village: null, test_group: 'reference',
          household_did: 'did:ixo:entity:0123456789abcdef0123456789abcdef', pin_encrypted: 'v1.x.y.z', failed_pin_attempts: 3, locked_at: now, created_at: now, updated_at: now,
        })
        .execute();
      const ok = await run(['12345678'], dir);
      expect(ok.code, ok.err).to.equal(0);
      expect(ok.out).to.equal('Unlocked Customer ID 12345678.\n');
      const row = await db.selectFrom('ussd_accounts').selectAll().where('customer_id', '=', '12345678').executeTakeFirstOrThrow();
      expect([row.locked_at, row.failed_pin_attempts]).to.deep.equal([null, 0]);
      const unknown = await run(['99999999'], dir);
      expect(unknown.code).to.equal(1);
      expect(unknown.err).to.include('No USSD account with Customer ID 99999999.');
      const missing = await run([], dir);
      expect(missing.code).to.equal(1);
      expect(missing.err).to.include('ussd-unlock takes one Customer ID');
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
