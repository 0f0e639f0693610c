import { hash } from 'node:crypto';
import { Writable } from 'node:stream';
import FakeTimers from '@sinonjs/fake-timers';
import express from 'express';
import request from 'supertest';
import { expect } from 'chai';
import { pino } from 'pino';
import { requireApiKey, principalOf } from '../../src/platform/http/auth.ts';
import { errorHandler, notFoundHandler } from '../../src/platform/http/errors.ts';
import { configWith } from '../../src/config.ts';
import { ApiKeyService } from '../../src/platform/keys/service.ts';
import { createLogger } from '../../src/platform/logging.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { createTestKey, startTestServer } from '../helpers/server.ts';

forEachDatabase('API keys', (t) => {
  let keys: ApiKeyService;
  before(() => {
    keys = new ApiKeyService(t.db);
  });

  it('creates a prefixed 256-bit key, stores only its hash, and authenticates it', async () => {
    const { key, info } = await keys.create({ name: 'partner', principalDid: 'did:ixo:entity:abc', scopes: ['claims:read'] });
    expect(key).to.match(/^hth_[A-Za-z0-9_-]{43}$/);
    const rows = await t.db('api_keys');
    expect(JSON.stringify(rows)).not.to.include(key);
    const p = await keys.authenticate(key);
    expect(p).to.deep.equal({ keyId: info.id, did: 'did:ixo:entity:abc', scopes: ['claims:read'] });
  });

  it('defaults to every scope but ussd:debug', async () => {
    const { info } = await keys.create({ name: 'default', principalDid: 'did:ixo:entity:abc' });
    expect(info.scopes).to.include('claims:write').and.not.include('ussd:debug');
  });

  it('refuses unknown scopes, a missing name and a principal that is not a DID', async () => {
    const countKeys = async () => Number((await t.db('api_keys').count({ n: '*' }).first())!.n);
    const fails = async (input: Parameters<ApiKeyService['create']>[0], re: RegExp) => {
      const before = await countKeys();
      let err: unknown;
      try {
        await keys.create(input);
      } catch (e) {
        err = e;
      }
      expect((err as Error)?.message).to.match(re);
      expect(await countKeys()).to.deep.equal(before);
    };
    await fails({ name: 'x', principalDid: 'did:ixo:a', scopes: ['root'] }, /Unknown scope\(s\): root/);
    await fails({ name: ' ', principalDid: 'did:ixo:a' }, /needs a name/);
    await fails({ name: 'x', principalDid: 'did:ixo:household/123' }, /DID URL/);
  });

  it('rejects unknown and revoked keys; lists without secrets', async () => {
    const { key, info } = await keys.create({ name: 'to-revoke', principalDid: 'did:ixo:entity:abc' });
    expect(await keys.authenticate('hth_nope')).to.equal(undefined);
    expect(await keys.authenticate('not-even-prefixed')).to.equal(undefined);
    expect(await keys.revoke(info.id)).to.equal(true);
    expect(await keys.revoke(info.id)).to.equal(false);
    expect(await keys.authenticate(key)).to.equal(undefined);
    const listed = await keys.list();
    expect(listed.find((k) => k.id === info.id)?.revokedAt).to.be.a('string');
    expect(JSON.stringify(listed)).not.to.include(key);
  });

  describe('principal cache', () => {
    it('reuses a verified principal for the TTL without the database, then asks again', async () => {
      const cached = new ApiKeyService(t.db, { cacheTtlMs: 150 });
      const { key, info } = await cached.create({ name: 'cached', principalDid: 'did:ixo:entity:abc' });
      // Only the clock the cache reads is faked: the database's own timers stay real.
      const clock = FakeTimers.install({ toFake: ['Date'], now: Date.now() });
      try {
        expect((await cached.authenticate(key))?.keyId).to.equal(info.id);
        // Revoked behind the cache's back (another process): still trusted inside the TTL...
        await new ApiKeyService(t.db).revoke(info.id);
        clock.tick(149);
        expect((await cached.authenticate(key))?.keyId).to.equal(info.id);
        // ...and refused once it has passed.
        clock.tick(1);
        expect(await cached.authenticate(key)).to.equal(undefined);
      } finally {
        clock.uninstall();
      }
    });

    it('a verification stamped ahead of the clock (the wall clock stepped back) is not trusted: the key is looked up again', async () => {
      const cached = new ApiKeyService(t.db, { cacheTtlMs: 60_000, staleIfErrorMs: 60_000 });
      const { key, info } = await cached.create({ name: 'clock-stepped-back', principalDid: 'did:ixo:entity:abc' });
      const clock = FakeTimers.install({ toFake: ['Date'], now: Date.now() });
      try {
        expect((await cached.authenticate(key))?.keyId).to.equal(info.id);
        await new ApiKeyService(t.db).revoke(info.id);
        clock.setSystemTime(Date.now() - 1000);
        expect(await cached.authenticate(key)).to.equal(undefined);
      } finally {
        clock.uninstall();
      }
    });

    it('by default, honours a key revoked by the CLI for seconds, not minutes, while the database cannot be asked', async () => {
      const config = configWith();
      const service = new ApiKeyService(t.db, { cacheTtlMs: config.API_KEY_CACHE_MS, staleIfErrorMs: config.API_KEY_STALE_IF_ERROR_MS });
      const { key, info } = await service.create({ name: 'revoked-in-outage', principalDid: 'did:ixo:entity:abc' });
      const clock = FakeTimers.install({ toFake: ['Date'], now: Date.now() });
      const repo = (service as unknown as { repo: { findActiveByHash: (hash: string) => Promise<unknown> } }).repo;
      try {
        expect((await service.authenticate(key))?.keyId).to.equal(info.id);
        await new ApiKeyService(t.db).revoke(info.id);
        // This process loses the database (a route that needs none still asks about the key).
        repo.findActiveByHash = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
        clock.tick(config.API_KEY_CACHE_MS);
        expect((await service.authenticate(key))?.keyId).to.equal(info.id);
        clock.tick(10_000 - config.API_KEY_CACHE_MS);
        let refused: unknown;
        await service.authenticate(key).catch((err: unknown) => (refused = err));
        expect((refused as { code?: string })?.code).to.equal('ECONNREFUSED');
      } finally {
        clock.uninstall();
      }
    });

    it('forgets a key revoked through the same service at once', async () => {
      const cached = new ApiKeyService(t.db, { cacheTtlMs: 60_000 });
      const { key, info } = await cached.create({ name: 'local', principalDid: 'did:ixo:entity:abc' });
      expect(await cached.authenticate(key)).to.not.equal(undefined);
      await cached.revoke(info.id);
      expect(await cached.authenticate(key)).to.equal(undefined);
    });

    it('without a TTL every call asks the database', async () => {
      const uncached = new ApiKeyService(t.db);
      const { key, info } = await uncached.create({ name: 'uncached', principalDid: 'did:ixo:entity:abc' });
      expect(await uncached.authenticate(key)).to.not.equal(undefined);
      await new ApiKeyService(t.db).revoke(info.id);
      expect(await uncached.authenticate(key)).to.equal(undefined);
    });

    it('does not cache unknown keys: a key created later is accepted', async () => {
      const cached = new ApiKeyService(t.db, { cacheTtlMs: 60_000 });
      expect(await cached.authenticate('hth_' + 'x'.repeat(43))).to.equal(undefined);
      const { key } = await cached.create({ name: 'later', principalDid: 'did:ixo:entity:abc' });
      expect(await cached.authenticate(key)).to.not.equal(undefined);
    });
  });

  describe('bearer middleware', () => {
    const app = express();
    before(() => {
      app.get('/private', requireApiKey(keys, 'claims:read'), (req, res) => {
        res.json({ did: principalOf(req).did });
      });
      app.use(notFoundHandler);
      app.use(errorHandler(createLogger({ LOG_LEVEL: 'silent' })));
    });

    it('answers 401 with WWW-Authenticate without a key', async () => {
      const res = await request(app).get('/private');
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.equal('Bearer realm="hearth"');
      expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
      expect(res.body).to.include({ status: 401, title: 'Unauthorized' });
    });

    it('answers 401 for a malformed header and for an unknown key', async () => {
      expect((await request(app).get('/private').set('Authorization', 'Basic abc')).status).to.equal(401);
      const res = await request(app).get('/private').set('Authorization', 'Bearer hth_unknown');
      expect(res.status).to.equal(401);
      expect(res.body.detail).to.match(/unknown or revoked/);
    });

    it('answers 403 for a key without the scope, with the insufficient_scope challenge naming it (RFC 6750 §3.1)', async () => {
      const { key } = await keys.create({ name: 'narrow', principalDid: 'did:ixo:entity:abc', scopes: ['twins:read'] });
      const res = await request(app).get('/private').set('Authorization', `Bearer ${key}`);
      expect(res.status).to.equal(403);
      expect(res.body.detail).to.equal('This API key lacks the scope claims:read.');
      expect(res.headers['www-authenticate']).to.equal('Bearer realm="hearth", error="insufficient_scope", scope="claims:read"');
    });

    it('passes the principal on for a key with the scope', async () => {
      const { key } = await keys.create({ name: 'ok', principalDid: 'did:ixo:entity:xyz', scopes: ['claims:read'] });
      const res = await request(app).get('/private').set('Authorization', `Bearer ${key}`);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ did: 'did:ixo:entity:xyz' });
    });
  });
});

forEachDatabase('API keys: a key that cannot be looked up', (t) => {
  it('is a 500 with a generic body, never a 401; the cause is logged without the bound values', async () => {
    let logs = '';
    const logger = pino({ level: 'error' }, new Writable({ write: (c, _e, cb) => ((logs += String(c)), cb()) }));
    const key = await createTestKey(t.db);
    const server = await startTestServer(t.db, { API_KEY_CACHE_MS: '0' }, { logger });
    await t.db.schema.renameTable('api_keys', 'api_keys_away');
    try {
      const res = await fetch(`${server.baseUrl}/agent/plugins`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).to.equal(500);
      expect(res.headers.get('www-authenticate')).to.equal(null);
      const body = await res.json();
      expect(body).to.include({ status: 500, title: 'Internal Server Error', detail: 'An unexpected error occurred.' });
      expect(logs).to.include('request failed').and.to.include('api_keys');
      for (const secret of [key, hash('sha256', key, 'hex')]) expect(logs + JSON.stringify(body)).to.not.include(secret);
    } finally {
      await t.db.schema.renameTable('api_keys_away', 'api_keys');
      await server.stop();
    }
  });
});
