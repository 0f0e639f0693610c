// API keys: 256-bit random secrets with a recognisable prefix, stored only as SHA-256 hashes,
// each bound to a principal DID and a set of scopes.
import { hash as digest, randomBytes } from 'node:crypto';
import { isDatabaseUnavailable, type Db } from '../db/index.ts';
import { didSyntaxError } from '../did.ts';
import { refusedInput } from '../domain-errors.ts';
import { ApiKeyRepository, type ApiKeyRow } from './repository.ts';

export const SCOPES = [
  'twins:read',
  'twins:write',
  'claims:read',
  'claims:write',
  'credentials:revoke',
  'chain:read',
  'agent:read',
  'agent:write',
  'ussd:debug',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Scopes a new key gets when none are named: everything but operator access. */
export const DEFAULT_SCOPES: Scope[] = SCOPES.filter((s) => s !== 'ussd:debug' && s !== 'credentials:revoke');

const KEY_PREFIX = 'hth_';

export interface Principal {
  keyId: string;
  did: string;
  scopes: Scope[];
}

export interface ApiKeyInfo {
  id: string;
  name: string;
  prefix: string;
  principalDid: string;
  scopes: Scope[];
  createdAt: string;
  revokedAt: string | null;
}

const hashKey = (key: string) => digest('sha256', key, 'hex');

const toInfo = (r: ApiKeyRow): ApiKeyInfo => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  principalDid: r.principal_did,
  scopes: JSON.parse(r.scopes) as Scope[],
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

export interface ApiKeyServiceOptions {
  /**
   * How long a verified key's principal is reused without asking the database (0 = never).
   * A key revoked by another process stops working within this time.
   */
  cacheTtlMs?: number;
  /**
   * How long after its last verification a key is still honoured while the database cannot be
   * asked (0 = never): an outage does not log out every caller once the cache above expires.
   */
  staleIfErrorMs?: number;
}

const PRINCIPAL_CACHE_MAX = 10_000;

export class ApiKeyService {
  private readonly repo: ApiKeyRepository;
  private readonly cacheTtlMs: number;
  private readonly staleIfErrorMs: number;
  /** Only known-good keys, by hash; unknown keys are never cached (no growth from guessing). */
  private readonly cache = new Map<string, { principal: Principal; verifiedAt: number }>();

  constructor(db: Db, options: ApiKeyServiceOptions = {}) {
    this.repo = new ApiKeyRepository(db);
    this.cacheTtlMs = options.cacheTtlMs ?? 0;
    this.staleIfErrorMs = options.staleIfErrorMs ?? 0;
  }

  /** Creates a key; the returned `key` is the only time the secret exists outside the caller. */
  async create(input: { name: string; principalDid: string; scopes?: string[] }): Promise<{ key: string; info: ApiKeyInfo }> {
    const name = input.name.trim();
    if (!name) throw refusedInput('A key needs a name.');
    const didError = didSyntaxError(input.principalDid);
    if (didError) throw refusedInput(`principal: ${didError}`);
    const scopes = input.scopes?.length ? input.scopes : DEFAULT_SCOPES;
    const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown.length) throw refusedInput(`Unknown scope(s): ${unknown.join(', ')}. Known: ${SCOPES.join(', ')}.`);
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    const row: ApiKeyRow = {
      id: randomBytes(8).toString('hex'),
      name,
      key_hash: hashKey(key),
      prefix: key.slice(0, 10),
      principal_did: input.principalDid,
      scopes: JSON.stringify([...new Set(scopes)]),
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    await this.repo.insert(row);
    return { key, info: toInfo(row) };
  }

  /** The principal a presented key stands for, or undefined for an unknown or revoked key. */
  async authenticate(key: string): Promise<Principal | undefined> {
    if (!key.startsWith(KEY_PREFIX)) return undefined;
    const hash = hashKey(key);
    const now = Date.now();
    const cached = this.cache.get(hash);
    // Whether the cached verification is younger than `ms`; one stamped ahead of now (the wall
    // clock stepped back) is not, for any `ms`.
    const verifiedWithin = (ms: number) => cached !== undefined && now >= cached.verifiedAt && now - cached.verifiedAt < ms;
    if (cached && verifiedWithin(this.cacheTtlMs)) return cached.principal;
    let row: ApiKeyRow | undefined;
    try {
      row = await this.repo.findActiveByHash(hash);
    } catch (err) {
      if (cached && isDatabaseUnavailable(err) && verifiedWithin(this.staleIfErrorMs)) return cached.principal;
      throw err;
    }
    if (!row) {
      this.cache.delete(hash);
      return undefined;
    }
    const principal: Principal = { keyId: row.id, did: row.principal_did, scopes: JSON.parse(row.scopes) as Scope[] };
    if (this.cacheTtlMs > 0 || this.staleIfErrorMs > 0) {
      if (this.cache.size >= PRINCIPAL_CACHE_MAX) this.cache.clear();
      this.cache.set(hash, { principal, verifiedAt: now });
    }
    return principal;
  }

  async list(): Promise<ApiKeyInfo[]> {
    return (await this.repo.list()).map(toInfo);
  }

  async revoke(id: string): Promise<boolean> {
    const revoked = await this.repo.revoke(id, new Date().toISOString());
    for (const [hash, entry] of this.cache) if (entry.principal.keyId === id) this.cache.delete(hash);
    return revoked;
  }
}
