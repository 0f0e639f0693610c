// The one place that reads environment variables. Each variable is typed, defaulted and
// validated here; a bad value stops start-up with a message naming the variable. Each says what
// it means in its .meta() (`unset`: what leaving it out means), from which `make generate` writes
// docs/configuration.md. Areas keep their own block.
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
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development').meta({ description: '`development`, `production` or `test`; reported by the health endpoints' }),
  HOST: z.string().min(1).default('0.0.0.0').meta({ description: 'address to listen on' }),
  PORT: port.default(3000).meta({ description: 'HTTP port' }),
  DATA_DIR: z.string().min(1).default('./data').meta({ description: 'folder for the SQLite file and other local state' }),
  DATABASE_URL: z
    .string()
    .regex(/^(postgres(ql)?:\/\/|sqlite:)/, 'must start with postgres://, postgresql:// or sqlite:')
    // SQLite takes an empty file name or :memory: (spaces around them trimmed) as a database
    // that is gone when it closes.
    .refine((v) => !/^sqlite:(\/\/)?\s*(:memory:)?\s*$/.test(v), 'sqlite: needs a file path, such as sqlite:./data/hearth.sqlite (an empty path or :memory: is a database lost at every restart)')
    .optional().meta({ description: '`postgres://user@host:5432/db` for PostgreSQL, or `sqlite:/path/file.sqlite`', unset: 'SQLite at `$DATA_DIR/hearth.sqlite`' }),
  DB_POOL_MAX: positiveInt.default(20).meta({ description: 'PostgreSQL connection pool size of each instance (instances × this must stay below the server\'s `max_connections`)' }),
  DB_HEALTH_TIMEOUT_MS: timerMs.default(1000).meta({ description: 'how long `/health` waits for the database before reporting `disconnected`' }),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').meta({ description: 'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`' }),
  // In bytes, read as body-parser reads the same text (a kb is 1024 bytes).
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'must look like 100kb')
    .default('100kb')
    .transform((v) => {
      const [, digits, unit] = /^(\d+)(\w+)$/.exec(v)!;
      return Number(digits) * UNIT_BYTES[unit!.toLowerCase()]!;
    })
    .meta({ description: 'largest accepted request body (`b`, `kb`, `mb`); a body over it gets 413 as soon as its declared length or its bytes pass the limit, and the connection closes' }),
  SHUTDOWN_TIMEOUT_MS: timerMs.default(10000).meta({ description: 'on SIGTERM/SIGINT, how long in-flight requests may take before connections are cut (logged at warn with how many were still open; a clean drain logs only `shutdown complete`)' }),
  TRUST_PROXY_ENABLED: bool.default(false).meta({ description: '`true` behind a reverse proxy: client address from `X-Forwarded-For` (for rate limits), believed only from the proxies in `TRUST_PROXY`' }),
  // With TRUST_PROXY_ENABLED, the proxies whose X-Forwarded-For is believed; a client reaching
  // Hearth from any other address is taken at its own address, whatever header it sends.
  TRUST_PROXY: addressList.default(['loopback']).meta({ description: 'with `TRUST_PROXY_ENABLED`: comma-separated addresses or CIDR ranges of your proxies (e.g. `10.0.0.5,10.1.0.0/16`; also `linklocal`, `uniquelocal`). A client reaching Hearth from any other address is taken at its own address, whatever `X-Forwarded-For` it sends' }),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://').optional().meta({ description: '`redis://host:6379` (a database index as its path, `redis://host:6379/7`, keeps two deployments on one Redis apart): rate-limit counters of every area shared by all instances, under keys `hearth:<area>:rl:*` (`ussd`, `twins`, `chain`, `agent`). While Redis is out of reach requests go through uncounted (the limit fails open), logged once a minute' }),
  // A key revoked elsewhere (the CLI, another instance) works here until the longer of these two
  // has passed since its last lookup: each is at most a minute, and seconds by default.
  API_KEY_CACHE_MS: keyTrustMs.default(5000).meta({ description: 'how long a verified API key is trusted without a database lookup (at most 60000); a key revoked from another process stops working within this time (`0` = look up every request)' }),
  // How long a key seen valid is still honoured while the database cannot be asked about it.
  API_KEY_STALE_IF_ERROR_MS: keyTrustMs.default(10_000).meta({ description: 'while the database is out of reach, a key verified within this time is still honoured (so `/agent/context` keeps answering); at most 60000, `0` = never' }),
  // The one database deadline: a statement, a wait for a pooled connection or for a new one; on
  // PostgreSQL a request's calls together (the driver's Reach, platform/db/drivers.ts).
  DB_QUERY_TIMEOUT_MS: timerMs.default(3000).meta({ description: 'the database deadline: each statement (PostgreSQL `statement_timeout`), each wait for a pooled or new connection, SQLite\'s wait for the write lock. A database that does not answer within it counts as out of reach: the request gets 503 with `Retry-After`' }),
  // A request not answered by then gets 503 (with Retry-After) in its area's shape.
  REQUEST_DEADLINE_MS: timerMs.default(10_000).meta({ description: 'a request not answered by then gets 503 with `Retry-After` (in its area\'s shape); one whose body is still arriving then gets 408 and the connection closes' }),
  // Bounds on receiving a request: its headers, and the whole of it (slow bodies).
  HTTP_HEADERS_TIMEOUT_MS: timerMs.default(10_000).meta({ description: 'how long a client may take to send a request\'s headers (then 408)' }),
  HTTP_REQUEST_TIMEOUT_MS: timerMs.default(30_000).meta({ description: 'how long a client may take to send a whole request, body included (then 408)' }),
  // The Retry-After of a 503 (database or deadline).
  RETRY_AFTER_SECONDS: wholeNumber.pipe(z.number().positive('must be at least 1').max(3600, 'must be at most 3600 (an hour)')).default(5).meta({ description: 'the `Retry-After` of every 503, in seconds (1 to 3600)' }),
  METRICS_ENABLED: bool.default(true).meta({ description: 'serve Prometheus metrics at `GET /metrics`' }),
  // When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional().meta({ description: 'when set (16+ characters), `/metrics` needs `Authorization: Bearer <METRICS_TOKEN>`', unset: '`/metrics` open' }),
  // Browser origins allowed to call areas A and D (/v1, /agent, /user-preferences); '*' for any.
  API_CORS_ORIGINS: originList.default([]).meta({ description: 'comma-separated browser origins as browsers send them (`https://app.example`: scheme, host, port; no path or wildcard), or `*` alone, allowed to call `/v1`, `/agent` and `/user-preferences` (and the MCP endpoint); area C has `CHAIN_CORS_ORIGINS`, area B none', unset: 'CORS off' }),
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
    .optional().meta({ description: 'absolute `http://` or `https://` base URL (a path may follow; no query, fragment or user:password) used in links the service hands out, and signed into every new credential (its status lists and evidence URLs are under it). The database keeps the one credentials are signed under: the first start records it, every instance uses it, and a start with another value is refused; `move-base-url <url>` moves it (earlier credentials keep verifying). Set it before the first start in production', unset: 'the URL the database recorded; on the first start `http://localhost:<PORT>`' }),
  VALIDATOR_PRIVATE_KEY: key32('an Ed25519 seed').optional().meta({ description: '32-byte Ed25519 seed, hex (64 chars) or base64/base64url, that signs credentials as `did:key:z6Mk...`; a malformed value stops start-up. Set it in production (the generated seed is stored in the database in clear). Keys used earlier stay trusted, so their credentials keep verifying', unset: 'generated once and stored in the database, shared by every instance' }),
  VALIDATOR_RETIRED_KEYS: list
    .refine((seeds) => seeds.every((seed) => parse32ByteKey(seed) !== undefined), 'must be comma-separated Ed25519 seeds: 32 bytes each, as 64 hex characters or base64')
    .default([])
    .meta({ description: 'comma-separated 32-byte Ed25519 seeds (hex or base64) of earlier `VALIDATOR_PRIVATE_KEY`s: a retired key issues nothing new but still signs its status lists, for the life of its credentials. Start-up is refused while a status list belongs to a key whose seed is neither here nor (generated) in the database', unset: 'no retired configured keys' }),
  KPT_TOTAL_TOLERANCE_KG: decimalNumber.default(0.01).meta({ description: 'allowed difference between `total` and the sum of `dailyLogs`' }),
  TWINS_RATE_LIMIT_PER_MINUTE: positiveInt.default(600).meta({ description: 'requests per minute (sliding window) on area A (`/v1`) per API key, and per client address for requests without a valid key (public routes, 401s); over it 429 problem+json with `Retry-After`' }),
  WEBHOOK_POLL_MS: nonNegativeInt.pipe(z.number().max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (a timer's limit)`)).default(1000).meta({ description: 'how often this instance looks for webhook deliveries due (and fans new events out into deliveries), in ms; `0`: this instance sends none (others sharing the database still do)' }),
  WEBHOOK_TIMEOUT_MS: timerMs.default(10_000).meta({ description: 'how long one webhook request may take (connect, send, answer) before the attempt counts as failed, in ms' }),
  WEBHOOK_RETRY_BASE_MS: timerMs.default(10_000).meta({ description: 'delay before the first retry of a failed webhook delivery, in ms; each further retry waits twice as long, up to `WEBHOOK_RETRY_MAX_MS`' }),
  WEBHOOK_RETRY_MAX_MS: timerMs.default(6 * 3600_000).meta({ description: 'the longest delay between two attempts of a webhook delivery, in ms' }),
  WEBHOOK_MAX_ATTEMPTS: positiveInt.default(12).meta({ description: 'attempts of one webhook delivery before it is given up (`failed`; it can still be redelivered by hand)' }),
  WEBHOOK_MAX_CONSECUTIVE_FAILURES: positiveInt.default(30).meta({ description: 'failed attempts in a row (any of its deliveries) after which a webhook subscription is disabled; its owner enables it again with PATCH' }),
  WEBHOOK_ALLOWED_NETWORKS: addressList.default([]).meta({ description: 'comma-separated addresses or CIDR ranges (or `loopback`, `linklocal`, `uniquelocal`) webhooks may be sent to although they are not public; every other private, loopback, link-local or reserved address is refused at subscription and checked again at each connection (DNS rebinding)', unset: 'webhooks reach public addresses only' }),
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
    .default('Hearth').meta({ description: 'name in the welcome menu (at most 40 characters: it shares a 182-character screen; letters of the GSM 7-bit alphabet only, as every screen is)' }),
  USSD_SESSION_IDLE_SECONDS: wholeNumber.pipe(z.number().positive('must be at least 1').max(86_400, 'must be at most 86400 (a day)')).default(180).meta({ description: 'idle time after which a session expires (at most 86400)' }),
  USSD_SWEEP_INTERVAL_SECONDS: timerSeconds.default(60).meta({ description: 'how often sessions closed or expired for more than one idle period are removed' }),
  USSD_DEBUG_ENABLED: bool.default(false).meta({ description: '`true` turns on the operator endpoints (key scope `ussd:debug`)' }),
  USSD_RATE_LIMIT_PER_MINUTE: positiveInt.default(100).meta({ description: 'requests per minute (sliding window) per client address on area B, for every caller not in `USSD_GATEWAY_ADDRESSES`' }),
  // Telecom gateways carry every household's traffic from a few addresses: hops from these are
  // limited per phone number instead of per address.
  USSD_GATEWAY_ADDRESSES: addressList.default([]).meta({ description: 'comma-separated addresses or CIDR ranges of your telecom gateways: their hops are limited per phone number instead of per address' }),
  USSD_PHONE_RATE_LIMIT_PER_MINUTE: positiveInt.default(30).meta({ description: 'hops per minute (sliding window) per phone number from a gateway address; over it the hop is answered 200 `END Too many requests...`' }),
  PIN_ENCRYPTION_KEY: key32('an AES-256 key').optional().meta({ description: '32 bytes, hex or base64, for AES-256-GCM PIN encryption', unset: 'development generates one into `$DATA_DIR`; production refuses to start' }),
  // The zone whose calendar days (today, yesterday, the day before) fuel is logged for.
  USSD_TIMEZONE: z
    .string()
    .refine(isTimeZone, 'must be an IANA time zone such as Africa/Nairobi')
    .default('UTC').meta({ description: 'IANA time zone (e.g. `Africa/Nairobi`) whose calendar days (today, yesterday, the day before) fuel is logged for' }),
  // The gateway's own principal: controller of the households it creates, submitter of claims.
  // The contract's one spelling of a DID (platform/did.ts): it is named in collections' submitters.
  USSD_PRINCIPAL_DID: z
    .string()
    .refine((v) => didSyntaxError(v) === undefined, 'must be a DID as the contract spells one, such as did:ixo:entity:<32 hex>')
    .default('did:ixo:entity:5e55d0a7e3c14a1f9b0e6c2d8f4a7b31').meta({ description: 'the gateway\'s own principal: controller of the household twins it creates and submitter of their KPT claims' }),
  // The KPT campaign (area A collection) USSD claims belong to; `ussd` is seeded by migration 203.
  USSD_COLLECTION_ID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be a collection id such as kisumu-2026')
    .default('ussd').meta({ description: 'the KPT campaign (area A collection) USSD claims belong to. `ussd` is created by the migrations: a full-population campaign over the households registered on the service over USSD (stated as such in its report and credentials), taking claims from `USSD_PRINCIPAL_DID` only (set at each start-up). For a random sample, create a collection with `POST /v1/collections`, a `simple-random` or `stratified-random` `selectionDesign` and `USSD_PRINCIPAL_DID` in its `submitters`, draw its households among the registered ones (`POST /v1/collections/{id}/draws`, then reveal), then set this and restart: start-up refuses a collection that does not exist, declares no selection design (such as `default`) or a self-selected one (their claims would all be rejected on rule 5), or does not take the gateway\'s claims' }),
  // The language of a phone without an account (households choose theirs in the menu).
  USSD_DEFAULT_LANGUAGE: z.enum(USSD_LANGUAGES).default('en').meta({ description: 'language of a phone without an account: `en` (English) or `sw` (Kiswahili); households choose theirs with `9` on the welcome menu. Also the language of the replies to a hop that is refused, fails or is rate limited, unless the instance served that session before (then the session\'s language; not for the per-address limit, counted before the hop is read); in English they are the interface specification\'s wording' }),
  // Daily fuel (kg) outside this range is saved only once the household confirms it.
  USSD_FUEL_KG_MIN: decimalNumber.pipe(z.number().positive('must be more than 0')).default(0.2).meta({ description: 'daily fuel (kg) below this is saved only after the household confirms it' }),
  USSD_FUEL_KG_MAX: decimalNumber.pipe(z.number().positive('must be more than 0').max(MAX_KG_PER_DAY, `must be at most ${MAX_KG_PER_DAY}, the most kg a claim may hold for a day`)).default(30).meta({ description: 'daily fuel (kg) above this is saved only after the household confirms it (must be above `USSD_FUEL_KG_MIN`)' }),
};

// ---- area C: chain query node and gateway -------------------------------------------------------
const chainSchema = {
  GRPC_PORT: port.default(9090).meta({ description: 'port of the embedded gRPC node. Its limits are a Cosmos node\'s (grpc-go): a request message of at most 4 MiB, unzipped too (RESOURCE_EXHAUSTED), a call whose message is still arriving at its `grpc-timeout` or `REQUEST_DEADLINE_MS` (whichever comes first) cut with DEADLINE_EXCEEDED (once its message is in, the database deadline bounds it; grpc-js and grpc-go clients also stop waiting at their own deadline), a call answered before its message is all in reset so the client stops sending, status messages of at most 500 characters, and a connection without a call for 65 s closed (pings do not keep it)' }),
  GRPC_HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'address of the embedded gRPC node' }),
  GRPC_ENABLED: bool.default(true).meta({ description: 'serve the embedded gRPC query node' }),
  CHAIN_GRPC_URL: z
    .string()
    .refine((v) => {
      const url = URL.parse(v);
      return !!url && (url.protocol === 'http:' || url.protocol === 'https:') && !!url.hostname && url.port !== '0' && url.pathname === '/' && !/[?#]/.test(v) && !url.username;
    }, 'must be http://host:port (or https://) of a gRPC node, without a path, such as http://node.example:9090')
    .optional().meta({ description: '`http://host:9090` of another node speaking the IXO query services', unset: 'the embedded node' }),
  CHAIN_GRPC_TIMEOUT_MS: timerMs.default(5000).meta({ description: 'deadline for each upstream call (then 504)' }),
  CHAIN_PREFIX: z.string().regex(/^\/[A-Za-z0-9_-]+$/, 'must look like /chain').default('/chain').meta({ description: 'protocol prefix of the gateway routes' }),
  CHAIN_PREFIX_ALIASES: list.pipe(z.array(z.string().regex(/^\/[A-Za-z0-9_-]+$/, 'each must look like /ixo'))).default([]).meta({ description: 'comma-separated extra prefixes, e.g. `/ixo`' }),
  CHAIN_BASE_PATH: z.string().regex(/^(\/[A-Za-z0-9_-]+)*$/, 'must be empty or look like /rest').default('').meta({ description: 'deployment base path before the prefix, e.g. `/rest`' }),
  CHAIN_GATEWAY_AUTH: z.enum(['none', 'apikey']).default('none').meta({ description: '`apikey` requires a key with scope `chain:read`' }),
  // v1: the edge of grpc-gateway v1 as Cosmos/IXO nodes run it; v2: the earlier 404/405 answers.
  CHAIN_GATEWAY_STYLE: z.enum(['v1', 'v2']).default('v1').meta({ description: 'edge behaviour of the gateway: `v1` answers as grpc-gateway v1.16 on a Cosmos/IXO node (501 for wrong methods, redirects, Go parsing); `v2` keeps the earlier v2-style answers (404, 405 with `Allow`, trailing slash ignored, decimal integers, a repeated parameter is 400)' }),
  // A path under a gateway prefix that no route has: 404 {"code":5} as the product's
  // specification says, or 501 {"code":12} as grpc-gateway v1 on a Cosmos node answers it.
  CHAIN_UNKNOWN_ROUTE_STATUS: z.enum(['404', '501']).default('404').meta({ description: 'the answer for a path under a served prefix that no route has: `404` `{"code":5,"message":"Not Found"}` as the specification\'s error table says, or `501` `{"code":12,"message":"Not Implemented"}`, byte for byte grpc-gateway v1.16 on a Cosmos/IXO node. A disabled or unimplemented method is 501 either way' }),
  CHAIN_CORS_ORIGINS: originList.default([]).meta({ description: 'comma-separated allowed browser origins (as `API_CORS_ORIGINS`), or `*` alone', unset: 'CORS off' }),
  CHAIN_RATE_LIMIT_PER_MINUTE: positiveInt.default(1200).meta({ description: 'requests per minute (sliding window) per client address on the gateway (area C, every served prefix); over it 429 `{"code":8,"message":...}` (RESOURCE_EXHAUSTED) with `Retry-After`. The gRPC port is not limited' }),
  CHAIN_DISABLED_METHODS: list.default([]).meta({ description: 'comma-separated full method names answered 501, e.g. `ixo.claims.v1beta1.Query.ClaimList`; an unknown name stops start-up' }),
  // Module params answered by the embedded node (a real chain keeps them in governance state).
  CHAIN_TOKEN_IXO1155_CONTRACT_CODE: z
    .string()
    .regex(/^\d{1,20}$/, 'must be an unsigned integer')
    .refine((v) => BigInt(v) < 2n ** 64n, 'must fit in a uint64 (at most 18446744073709551615)')
    .default('0').meta({ description: '`ixo1155_contract_code` answered by `/chain/token/params` (uint64)' }),
  CHAIN_ENTITY_NFT_CONTRACT_ADDRESS: z.string().default('').meta({ description: '`nftContractAddress` of `/chain/entity/params`' }),
  CHAIN_ENTITY_NFT_CONTRACT_MINTER: z.string().default('').meta({ description: '`nftContractMinter` of `/chain/entity/params`' }),
  CHAIN_CLAIMS_IXO_ACCOUNT: z.string().default('').meta({ description: '`ixo_account` of `/chain/claims/params`' }),
  CHAIN_CLAIMS_NETWORK_FEE_PERCENTAGE: z.string().regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal like 0.1').default('0').meta({ description: '`network_fee_percentage` of `/chain/claims/params`, a decimal like `0.1` (rendered `"0.100000000000000000"`)' }),
  CHAIN_CLAIMS_NODE_FEE_PERCENTAGE: z.string().regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal like 0.1').default('0').meta({ description: '`node_fee_percentage` of `/chain/claims/params`, a decimal' }),
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
    .default({}).meta({ description: 'JSON features map `{"<plugin>": true|false}`, e.g. `{"user-preferences": false}`; not a JSON object of booleans stops start-up naming the variable' }),
  AGENT_FEATURES_FILE: z.string().min(1).optional().meta({ description: 'path of a JSON file with the features map (overrides `AGENT_FEATURES`); unreadable or invalid stops start-up naming the variable' }),
  AGENT_RATE_LIMIT_PER_MINUTE: positiveInt.default(600).meta({ description: 'requests per minute (sliding window) on area D (`/agent`, `/user-preferences`) per API key, and per client address for requests without a valid key; over it 429 problem+json with `Retry-After`' }),
};

/** Names of the variables set in the environment: what plugins' requiredEnv is checked against. */
function agentEnvNames(env: Record<string, string>): string[] {
  return Object.keys(env).sort();
}

/** Each block of variables under its heading in docs/configuration.md (scripts/generate-config-doc.ts). */
export const configSections = [
  { title: 'Platform', variables: platformSchema },
  { title: 'Area A: twins, claims, credentials', variables: twinsSchema },
  { title: 'Area B: USSD', variables: ussdSchema },
  { title: 'Area C: chain query node and gateway', variables: chainSchema },
  { title: 'Area D: agent runtime', variables: agentSchema },
] as const;

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
