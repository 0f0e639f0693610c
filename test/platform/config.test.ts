import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('config', () => {
  it('defaults every variable on an empty environment', () => {
    const c = loadConfig({});
    expect(c.PORT).to.equal(3000);
    expect(c.NODE_ENV).to.equal('development');
    expect(c.DATABASE_URL).to.equal(undefined);
    expect(c.DATA_DIR).to.equal('./data');
    expect(c.USSD_SESSION_IDLE_SECONDS).to.equal(180);
    expect(c.GRPC_PORT).to.equal(9090);
    expect(c.CHAIN_PREFIX).to.equal('/chain');
    expect(c.TRUST_PROXY_ENABLED).to.equal(false);
  });

  it('parses typed values', () => {
    const c = loadConfig({ PORT: '8080', TRUST_PROXY_ENABLED: 'true', CHAIN_PREFIX_ALIASES: '/ixo, /legacy', DATABASE_URL: 'postgres://u@h/db' });
    expect(c.PORT).to.equal(8080);
    expect(c.TRUST_PROXY_ENABLED).to.equal(true);
    expect(c.CHAIN_PREFIX_ALIASES).to.deep.equal(['/ixo', '/legacy']);
    expect(c.DATABASE_URL).to.equal('postgres://u@h/db');
  });

  it('takes the largest uint64 as a contract code', () => {
    expect(loadConfig({ CHAIN_TOKEN_IXO1155_CONTRACT_CODE: '18446744073709551615' }).CHAIN_TOKEN_IXO1155_CONTRACT_CODE).to.equal('18446744073709551615');
  });

  it('takes addresses and CIDR ranges for TRUST_PROXY and USSD_GATEWAY_ADDRESSES', () => {
    expect(loadConfig({}).TRUST_PROXY).to.deep.equal(['loopback']);
    const c = loadConfig({ TRUST_PROXY: '10.0.0.1, 172.16.0.0/12', USSD_GATEWAY_ADDRESSES: '196.201.214.0/24,2001:db8::/32' });
    expect(c.TRUST_PROXY).to.deep.equal(['10.0.0.1', '172.16.0.0/12']);
    expect(c.USSD_GATEWAY_ADDRESSES).to.deep.equal(['196.201.214.0/24', '2001:db8::/32']);
  });

  it('takes CORS origins as browsers send them, or *', () => {
    expect(loadConfig({ API_CORS_ORIGINS: 'https://app.example, http://localhost:5173' }).API_CORS_ORIGINS).to.deep.equal(['https://app.example', 'http://localhost:5173']);
    expect(loadConfig({ CHAIN_CORS_ORIGINS: '*' }).CHAIN_CORS_ORIGINS).to.deep.equal(['*']);
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://hearth.example/base' }).PUBLIC_BASE_URL).to.equal('https://hearth.example/base');
  });

  it('takes numbers in decimal digits, a file for SQLite, and a gRPC node by its http(s) URL', () => {
    const c = loadConfig({ PORT: '8080', DB_POOL_MAX: '25', API_KEY_CACHE_MS: '0', USSD_FUEL_KG_MIN: '0.5', KPT_TOTAL_TOLERANCE_KG: '0', DATABASE_URL: 'sqlite:./x.sqlite', CHAIN_GRPC_URL: 'http://node.example:9090' });
    expect([c.PORT, c.DB_POOL_MAX, c.API_KEY_CACHE_MS, c.USSD_FUEL_KG_MIN, c.KPT_TOTAL_TOLERANCE_KG, c.DATABASE_URL, c.CHAIN_GRPC_URL]).to.deep.equal([8080, 25, 0, 0.5, 0, 'sqlite:./x.sqlite', 'http://node.example:9090']);
  });

  it('treats an empty string as unset', () => {
    expect(loadConfig({ PORT: '' }).PORT).to.equal(3000);
  });

  for (const [name, value] of [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['NODE_ENV', 'staging'],
    ['DATABASE_URL', 'mysql://x'],
    ['TRUST_PROXY_ENABLED', 'maybe'],
    ['LOG_LEVEL', 'loud'],
    ['REDIS_URL', 'http://x'],
    ['CHAIN_TOKEN_IXO1155_CONTRACT_CODE', '18446744073709551616'],
    ['CHAIN_GRPC_TIMEOUT_MS', '2147483648'],
    ['SHUTDOWN_TIMEOUT_MS', '99999999999'],
    ['USSD_SWEEP_INTERVAL_SECONDS', '2147484'],
    ['USSD_SESSION_IDLE_SECONDS', '86401'],
    ['AGENT_FEATURES', '{"__proto__": true}'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['USSD_GATEWAY_ADDRESSES', '10.0.0.1, gateway.example'],
    ['DB_QUERY_TIMEOUT_MS', '0'],
    ['REQUEST_DEADLINE_MS', '2147483648'],
    ['HTTP_REQUEST_TIMEOUT_MS', 'soon'],
    ['RETRY_AFTER_SECONDS', '0'],
    ['PUBLIC_BASE_URL', 'ftp://hearth.example'],
    ['API_CORS_ORIGINS', 'notanorigin'],
    ['API_CORS_ORIGINS', 'https://app.example/'],
    ['CHAIN_CORS_ORIGINS', 'https://app.example, app.example'],
    ['API_CORS_ORIGINS', 'https://*.example'],
    ['API_CORS_ORIGINS', 'https://app.example, *'],
    ['PUBLIC_BASE_URL', 'https://hearth.example/base?q=1'],
    ['PUBLIC_BASE_URL', 'https://hearth.example/#top'],
    ['PUBLIC_BASE_URL', 'https://user:secret@hearth.example'],
    ['GRPC_PORT', '3000'],
    // A database lost at every restart.
    ['DATABASE_URL', 'sqlite:'],
    ['DATABASE_URL', 'sqlite://'],
    ['DATABASE_URL', 'sqlite::memory:'],
    // Text z.url passes but URL cannot parse: no stack trace.
    ['PUBLIC_BASE_URL', 'http://'],
    ['PUBLIC_BASE_URL', 'http://a b'],
    // host:port (how gRPC addresses are often written) made every /chain route a 500.
    ['CHAIN_GRPC_URL', 'localhost:9090'],
    ['CHAIN_GRPC_URL', 'ftp://node.example:9090'],
    ['CHAIN_GRPC_URL', 'foo:bar'],
    // Numbers in decimal digits only: ' ' had been 0 (a random port), 0x10 16, 1e3 1000.
    ['PORT', ' '],
    ['PORT', '0x10'],
    ['PORT', '1e3'],
    ['DB_POOL_MAX', '2.5'],
    ['API_KEY_CACHE_MS', '-1'],
    // A revoked key is honoured this long: seconds, not minutes.
    ['API_KEY_CACHE_MS', '60001'],
    ['API_KEY_STALE_IF_ERROR_MS', '600000'],
    ['USSD_FUEL_KG_MIN', '0x1'],
    ['KPT_TOTAL_TOLERANCE_KG', 'Infinity'],
    ['DATABASE_URL', 'sqlite: '],
    ['DATABASE_URL', 'sqlite: :memory: '],
    ['PUBLIC_BASE_URL', 'https://example.org/a b'],
    ['PUBLIC_BASE_URL', 'https://example.org?'],
    ['PUBLIC_BASE_URL', 'https://example.org#'],
    ['CHAIN_GRPC_URL', 'http://127.0.0.1:9090/x'],
    ['CHAIN_GRPC_URL', 'http://127.0.0.1:0'],
    ['USSD_FUEL_KG_MAX', '2000'],
    // The contract's one spelling of a DID.
    ['USSD_PRINCIPAL_DID', 'did:ixo:entity:%zz'],
    ['USSD_PRINCIPAL_DID', 'did:ixo:entity:%61bc'],
    // USSD screens are GSM 7-bit text.
    ['USSD_APP_NAME', 'Jikoni Bora ũ'],
    ['USSD_APP_NAME', 'Hearth {beta}'],
  ] as const) {
    it(`rejects ${name}=${value} with a message naming the variable`, () => {
      expect(() => loadConfig({ [name]: value })).to.throw(ConfigError, new RegExp(`^Invalid configuration:\\n  ${name}: `));
    });
  }
});
