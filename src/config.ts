// The one place that reads environment variables. Each variable is typed, defaulted and
// validated here; a bad value stops start-up with a message naming the variable.
// Every variable is documented in README.md ("Configuration"). Areas keep their own block.
import proxyaddr from 'proxy-addr';
import { SegmentedMessage } from 'sms-segments-calculator';
import { z } from 'zod';
import { bundledContract, contractSchema } from './platform/contract.ts';
import { didSyntaxError } from './platform/did.ts';
import { parse32ByteKey } from './platform/key-bytes.ts';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
// Numbers as an operator writes them, in decimal digits: z.coerce.number took ' ' as 0 (PORT=' '
// listened on a random port), 0x10 as 16 and 1e3 as 1000.
const wholeNumber = z.string().regex(/^\d+$/, 'must be a whole number in decimal digits, such as 3000').transform(Number);
const decimalNumber = z.string().regex(/^\d+(\.\d+)?$/, 'must be a number in decimal digits, such as 0.5').transform(Number);
const port = wholeNumber.pipe(z.number().max(65535, 'must be at most 65535'));
const nonNegativeInt = wholeNumber.pipe(z.number().max(Number.MAX_SAFE_INTEGER, 'is too large'));
const positiveInt = wholeNumber.pipe(z.number().positive('must be at least 1').max(Number.MAX_SAFE_INTEGER, 'is too large'));
// Node's timers take at most 2^31-1 ms; a longer delay silently becomes 1 ms.
const MAX_TIMER_MS = 2 ** 31 - 1;
const timerMs = wholeNumber.pipe(z.number().positive('must be at least 1').max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (a timer's limit)`));
const timerSeconds = wholeNumber.pipe(
  z.number().positive('must be at least 1').max(Math.floor(MAX_TIMER_MS / 1000), `must be at most ${Math.floor(MAX_TIMER_MS / 1000)} (a timer's limit)`),
);
const UNIT_BYTES: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2 };
const MAX_KEY_TRUST_MS = 60_000;
const keyTrustMs = nonNegativeInt.pipe(z.number().max(MAX_KEY_TRUST_MS, `must be at most ${MAX_KEY_TRUST_MS} (a minute): a revoked key is honoured up to this long`));
/** A 32-byte key, as 64 hex characters or base64. */
const key32 = (what: string) => z.string().refine((v) => parse32ByteKey(v) !== undefined, `must be ${what}: 32 bytes as 64 hex characters or base64`);
const list = z.string().transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean));
/** A browser origin as browsers send it (`https://app.example`, `http://localhost:5173`): scheme, host and port only. */
function isOrigin(entry: string): boolean {
  try {
    const url = new URL(entry);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === entry;
  } catch {
    return false;
  }
}
/** CORS origins: '*' alone (any), or origins; a wildcard host is no origin a browser sends. */
const originList = list.refine(
  (entries) => (entries.includes('*') ? entries.length === 1 : entries.every((e) => isOrigin(e) && !e.includes('*'))),
  "must be '*' alone or comma-separated origins such as https://app.example (scheme, host and port; no path, trailing slash or wildcard)",
);
/** Addresses and CIDR ranges (and proxy-addr's names loopback, linklocal, uniquelocal). */
const addressList = list.refine((entries) => {
  try {
    proxyaddr.compile(entries);
    return true;
  } catch {
    return false;
  }
}, 'must be comma-separated IP addresses or CIDR ranges such as 10.0.0.0/8 (or loopback, linklocal, uniquelocal)');

// ---- platform -------------------------------------------------------------------------------
const platformSchema = {
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.default(3000),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^(postgres(ql)?:\/\/|sqlite:)/, 'must start with postgres://, postgresql:// or sqlite:')
    // SQLite takes an empty file name or :memory: (spaces around them trimmed) as a database
    // that is gone when it closes.
    .refine((v) => !/^sqlite:(\/\/)?\s*(:memory:)?\s*$/.test(v), 'sqlite: needs a file path, such as sqlite:./data/hearth.sqlite (an empty path or :memory: is a database lost at every restart)')
    .optional(),
  DB_POOL_MAX: positiveInt.default(10),
  DB_HEALTH_TIMEOUT_MS: timerMs.default(1000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // In bytes, read as body-parser reads the same text (a kb is 1024 bytes).
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'must look like 100kb')
    .default('100kb')
    .transform((v) => {
      const [, digits, unit] = /^(\d+)(\w+)$/.exec(v)!;
      return Number(digits) * UNIT_BYTES[unit!.toLowerCase()]!;
    }),
  SHUTDOWN_TIMEOUT_MS: timerMs.default(10000),
  TRUST_PROXY_ENABLED: bool.default(false),
  // With TRUST_PROXY_ENABLED, the proxies whose X-Forwarded-For is believed; a client reaching
  // Hearth from any other address is taken at its own address, whatever header it sends.
  TRUST_PROXY: addressList.default(['loopback']),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://').optional(),
  // A key revoked elsewhere (the CLI, another instance) works here until the longer of these two
  // has passed since its last lookup: each is at most a minute, and seconds by default.
  API_KEY_CACHE_MS: keyTrustMs.default(5000),
  // How long a key seen valid is still honoured while the database cannot be asked about it.
  API_KEY_STALE_IF_ERROR_MS: keyTrustMs.default(10_000),
  // The one database deadline: a statement, a wait for a pooled connection or for a new one; on
  // PostgreSQL a request's calls together (the driver's Reach, platform/db/drivers.ts).
  DB_QUERY_TIMEOUT_MS: timerMs.default(3000),
  // A request not answered by then gets 503 (with Retry-After) in its area's shape.
  REQUEST_DEADLINE_MS: timerMs.default(10_000),
  // Bounds on receiving a request: its headers, and the whole of it (slow bodies).
  HTTP_HEADERS_TIMEOUT_MS: timerMs.default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: timerMs.default(30_000),
  // The Retry-After of a 503 (database or deadline).
  RETRY_AFTER_SECONDS: wholeNumber.pipe(z.number().positive('must be at least 1').max(3600, 'must be at most 3600 (an hour)')).default(5),
  METRICS_ENABLED: bool.default(true),
  // When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  // Browser origins allowed to call areas A and D (/v1, /agent, /user-preferences); '*' for any.
  API_CORS_ORIGINS: originList.default([]),
};

// ---- area A: twins, claims, credentials -------------------------------------------------------
const twinsSchema = {
  // Links are this base plus a path, signed into credentials: no query, fragment or credentials.
  PUBLIC_BASE_URL: z
    .url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' })
    // z.url passes some text (http://) that URL cannot parse; links are this text plus a path,
    // so a space, `?` or `#` in it would be in every link signed.
    .refine((v) => URL.canParse(v) && !/[\s?#]/.test(v), 'must be an http:// or https:// URL (no spaces, query or fragment)')
    .refine((v) => {
      const url = URL.parse(v);
      return !url || (!url.search && !url.hash && !url.username && !url.password);
    }, 'must be a base URL without a query, fragment or user:password')
    .optional(),
  VALIDATOR_PRIVATE_KEY: key32('an Ed25519 seed').optional(),
  KPT_TOTAL_TOLERANCE_KG: decimalNumber.default(0.01),
};

// ---- area B: USSD ------------------------------------------------------------------------------
function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The languages USSD screens are written in: a catalogue each (src/ussd/i18n). */
export const USSD_LANGUAGES = ['en', 'sw'] as const;

// The most kg a claim may hold for one day: the contract's bound on FuelMeasurements' dailyLogs
// items, so an amount area A would refuse is refused when typed, not when the claim is sent.
const dailyLogsItem = contractSchema(bundledContract(), 'FuelMeasurements').properties?.dailyLogs?.items as { maximum?: number } | undefined;
if (typeof dailyLogsItem?.maximum !== 'number') throw new Error('The bundled contract has no maximum for FuelMeasurements.dailyLogs items; run make generate.');
export const MAX_KG_PER_DAY: number = dailyLogsItem.maximum;

const ussdSchema = {
  USSD_APP_NAME: z
    .string()
    .min(1)
    .max(40)
    // Shown on USSD screens, which are GSM 7-bit text: one letter outside it (ũ) makes a screen UCS-2, 80 characters at most.
    .refine((v) => new SegmentedMessage(v).encodingName === 'GSM-7' && !/[\f^{}\\[~\]|€]/.test(v), 'must be in the GSM 7-bit alphabet of USSD screens (no letters such as ũ or ë, no ^{}[]~|\\€)')
    .default('Hearth'),
  USSD_SESSION_IDLE_SECONDS: wholeNumber.pipe(z.number().positive('must be at least 1').max(86_400, 'must be at most 86400 (a day)')).default(180),
  USSD_SWEEP_INTERVAL_SECONDS: timerSeconds.default(60),
  USSD_DEBUG_ENABLED: bool.default(false),
  USSD_RATE_LIMIT_PER_MINUTE: positiveInt.default(100),
  // Telecom gateways carry every household's traffic from a few addresses: hops from these are
  // limited per phone number instead of per address.
  USSD_GATEWAY_ADDRESSES: addressList.default([]),
  USSD_PHONE_RATE_LIMIT_PER_MINUTE: positiveInt.default(30),
  PIN_ENCRYPTION_KEY: key32('an AES-256 key').optional(),
  // The zone whose calendar days (today, yesterday, the day before) fuel is logged for.
  USSD_TIMEZONE: z
    .string()
    .refine(isTimeZone, 'must be an IANA time zone such as Africa/Nairobi')
    .default('UTC'),
  // The gateway's own principal: controller of the households it creates, submitter of claims.
  // The contract's one spelling of a DID (platform/did.ts): it is named in collections' submitters.
  USSD_PRINCIPAL_DID: z
    .string()
    .refine((v) => didSyntaxError(v) === undefined, 'must be a DID as the contract spells one, such as did:ixo:entity:<32 hex>')
    .default('did:ixo:entity:5e55d0a7e3c14a1f9b0e6c2d8f4a7b31'),
  // The KPT campaign (area A collection) USSD claims belong to; `ussd` is seeded by migration 203.
  USSD_COLLECTION_ID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be a collection id such as kisumu-2026')
    .default('ussd'),
  // The language of a phone without an account (households choose theirs in the menu).
  USSD_DEFAULT_LANGUAGE: z.enum(USSD_LANGUAGES).default('en'),
  // Daily fuel (kg) outside this range is saved only once the household confirms it.
  USSD_FUEL_KG_MIN: decimalNumber.pipe(z.number().positive('must be more than 0')).default(0.2),
  USSD_FUEL_KG_MAX: decimalNumber.pipe(z.number().positive('must be more than 0').max(MAX_KG_PER_DAY, `must be at most ${MAX_KG_PER_DAY}, the most kg a claim may hold for a day`)).default(30),
};

// ---- area C: chain query node and gateway -------------------------------------------------------
const chainSchema = {
  GRPC_PORT: port.default(9090),
  GRPC_HOST: z.string().min(1).default('127.0.0.1'),
  GRPC_ENABLED: bool.default(true),
  CHAIN_GRPC_URL: z
    .string()
    .refine((v) => {
      const url = URL.parse(v);
      return !!url && (url.protocol === 'http:' || url.protocol === 'https:') && !!url.hostname && url.port !== '0' && url.pathname === '/' && !/[?#]/.test(v) && !url.username;
    }, 'must be http://host:port (or https://) of a gRPC node, without a path, such as http://node.example:9090')
    .optional(),
  CHAIN_GRPC_TIMEOUT_MS: timerMs.default(5000),
  CHAIN_PREFIX: z.string().regex(/^\/[A-Za-z0-9_-]+$/, 'must look like /chain').default('/chain'),
  CHAIN_PREFIX_ALIASES: list.pipe(z.array(z.string().regex(/^\/[A-Za-z0-9_-]+$/, 'each must look like /ixo'))).default([]),
  CHAIN_BASE_PATH: z.string().regex(/^(\/[A-Za-z0-9_-]+)*$/, 'must be empty or look like /rest').default(''),
  CHAIN_GATEWAY_AUTH: z.enum(['none', 'apikey']).default('none'),
  // v1: the edge of grpc-gateway v1 as Cosmos/IXO nodes run it; v2: the earlier 404/405 answers.
  CHAIN_GATEWAY_STYLE: z.enum(['v1', 'v2']).default('v1'),
  // A path under a gateway prefix that no route has: 404 {"code":5} as the product's
  // specification says, or 501 {"code":12} as grpc-gateway v1 on a Cosmos node answers it.
  CHAIN_UNKNOWN_ROUTE_STATUS: z.enum(['404', '501']).default('404'),
  CHAIN_CORS_ORIGINS: originList.default([]),
  CHAIN_DISABLED_METHODS: list.default([]),
  // Module params answered by the embedded node (a real chain keeps them in governance state).
  CHAIN_TOKEN_IXO1155_CONTRACT_CODE: z
    .string()
    .regex(/^\d{1,20}$/, 'must be an unsigned integer')
    .refine((v) => BigInt(v) < 2n ** 64n, 'must fit in a uint64 (at most 18446744073709551615)')
    .default('0'),
  CHAIN_ENTITY_NFT_CONTRACT_ADDRESS: z.string().default(''),
  CHAIN_ENTITY_NFT_CONTRACT_MINTER: z.string().default(''),
  CHAIN_CLAIMS_IXO_ACCOUNT: z.string().default(''),
  CHAIN_CLAIMS_NETWORK_FEE_PERCENTAGE: z.string().regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal like 0.1').default('0'),
  CHAIN_CLAIMS_NODE_FEE_PERCENTAGE: z.string().regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal like 0.1').default('0'),
};

// ---- area D: agent runtime ------------------------------------------------------------------------
/** The features map: exact plugin names to booleans (src/agent/runtime/features.ts). */
// A record schema drops a "__proto__" member; it is refused by name rather than lost silently.
export const featuresMapSchema = z
  .unknown()
  .refine((v) => !(typeof v === 'object' && v !== null && Object.hasOwn(v, '__proto__')), '"__proto__" cannot name a plugin')
  .pipe(z.record(z.string(), z.boolean({ message: 'must be true or false' })));
const agentSchema = {
  AGENT_FEATURES: z
    .string()
    .transform((raw, ctx) => {
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object such as {"user-preferences": false}' });
        return z.NEVER;
      }
    })
    .pipe(featuresMapSchema)
    .default({}),
  AGENT_FEATURES_FILE: z.string().min(1).optional(),
};

/** Names of the variables set in the environment: what plugins' requiredEnv is checked against. */
function agentEnvNames(env: Record<string, string>): string[] {
  return Object.keys(env).sort();
}

const envSchema = z
  .object({
    ...platformSchema,
    ...twinsSchema,
    ...ussdSchema,
    ...chainSchema,
    ...agentSchema,
  })
  // Checked with the rest, before anything is created: development generates a PIN key into
  // DATA_DIR, production must be given the one its stored PINs are sealed with.
  .superRefine((c, ctx) => {
    if (c.NODE_ENV === 'production' && c.PIN_ENCRYPTION_KEY === undefined) {
      ctx.addIssue({ code: 'custom', path: ['PIN_ENCRYPTION_KEY'], message: 'required in production (32 bytes, hex or base64)' });
    }
    if (c.GRPC_ENABLED && c.PORT !== 0 && c.GRPC_PORT === c.PORT) {
      ctx.addIssue({ code: 'custom', path: ['GRPC_PORT'], message: `must differ from PORT (${c.PORT}): the HTTP server listens there` });
    }
  });

export type Config = z.infer<typeof envSchema> & {
  /** Area D: names (never values) of the set environment variables, for plugins' requiredEnv. */
  agentEnvNames: readonly string[];
};

/** Where partners reach this instance: PUBLIC_BASE_URL without a trailing slash, else this machine's PORT. */
export const publicBaseUrl = (config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT'>): string =>
  config.PUBLIC_BASE_URL?.replace(/\/$/, '') ?? `http://localhost:${config.PORT}`;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A value found wrong outside the schema (a file, the database, Redis, the compiled-in methods), said as loadConfig says one. */
export const invalidConfig = (variable: string, message: string) => new ConfigError(`Invalid configuration:\n  ${variable}: ${message}`);

/** Parses an environment (process.env by default). Empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return { ...result.data, agentEnvNames: agentEnvNames(cleaned as Record<string, string>) };
}

/** A full config for tests and tools: defaults plus the given overrides. */
export function configWith(overrides: Record<string, string | undefined> = {}): Config {
  // An ephemeral gRPC port, so two test servers never contend for 9090.
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', GRPC_PORT: '0', ...overrides });
}
