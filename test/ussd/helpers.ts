// Helpers for area B tests: a real Hearth on 127.0.0.1 with a movable clock, and a gateway
// client that sends Africa's Talking style cumulative text.
import { randomBytes, randomInt } from 'node:crypto';
import { expect } from 'chai';
import { createHearth, type Hearth } from '../../src/app.ts';
import { configWith, type Config } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { createLogger, type Logger } from '../../src/platform/logging.ts';
import { listen } from '../../src/platform/server.ts';
import type { ClaimStatus } from '../../generated/openapi/types.gen.ts';
import type { Sql } from '../../src/platform/db/sql.ts';
import type { UssdTwinsPort } from '../../src/ussd/index.ts';
import { USSD_COLLECTION_DESIGN } from '../../src/ussd/collections.ts';
import type { ClaimSummary, KptClaimSubmission } from '../../src/ussd/twins-port.ts';

export const TEST_PIN_KEY = 'ab'.repeat(32);

export interface UssdTestServer {
  baseUrl: string;
  config: Config;
  hearth: Hearth;
  clock: { now: Date };
  stop(): Promise<void>;
}

export async function startUssdServer(
  db: Db,
  env: Record<string, string> = {},
  opts: { twins?: UssdTwinsPort; clock?: { now: Date }; logger?: Logger } = {},
): Promise<UssdTestServer> {
  // No webhook dispatcher polling the suite's database in the background (as startTestServer).
  const config = configWith({ DATA_DIR: './data/test', GRPC_PORT: '0', PIN_ENCRYPTION_KEY: TEST_PIN_KEY, USSD_RATE_LIMIT_PER_MINUTE: '100000', WEBHOOK_POLL_MS: '0', ...env });
  const clock = opts.clock ?? { now: new Date('2026-03-02T08:00:00Z') };
  const hearth = await createHearth({ config, db, logger: opts.logger ?? createLogger(config), now: () => clock.now, ussdTwins: opts.twins });
  const running = await listen(hearth.app, 0, '127.0.0.1', 1000);
  return {
    baseUrl: `http://127.0.0.1:${running.port}`,
    config,
    hearth,
    clock,
    async stop() {
      await running.stop();
      await hearth.close();
    },
  };
}

/**
 * Two app instances on one database (the second on a connection pool of its own), sharing the
 * recording twins and the clock; both are stopped after `fn`.
 */
export async function withTwoInstances(db: Db, openAnother: () => Db, fn: (a: UssdTestServer, b: UssdTestServer) => Promise<void>): Promise<void> {
  const twins = new RecordingTwins();
  const a = await startUssdServer(db, {}, { twins });
  const b = await startUssdServer(openAnother(), {}, { twins, clock: a.clock });
  try {
    await fn(a, b);
  } finally {
    await a.stop();
    await b.stop();
  }
}

export interface Hop {
  status: number;
  text: string;
  contentType: string | null;
}

export async function postUssd(baseUrl: string, body: Record<string, unknown>, opts: { form?: boolean; headers?: Record<string, string> } = {}): Promise<Hop> {
  const res = await fetch(`${baseUrl}/api/ussd`, {
    method: 'POST',
    headers: { 'Content-Type': opts.form ? 'application/x-www-form-urlencoded' : 'application/json', ...opts.headers },
    body: opts.form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') };
}

export const newSessionId = () => `ATUid_${randomBytes(8).toString('hex')}`;
export const randomPhone = () => `+2547${randomInt(10_000_000, 100_000_000)}`;

/**
 * One dialled session as a telecom gateway drives it: `dial()` sends empty text, each
 * `send(input)` appends `*input` to the cumulative text. `urls` lets hops go to different instances.
 */
export class GatewaySession {
  readonly sessionId = newSessionId();
  text = '';
  private started = false;
  private inputs: string[] = [];
  private turn = 0;
  constructor(
    private readonly urls: string[],
    readonly phoneNumber = randomPhone(),
    readonly serviceCode = '*384*1234#',
  ) {}

  private next(): string {
    return this.urls[this.turn++ % this.urls.length]!;
  }

  async dial(): Promise<string> {
    this.started = true;
    return this.post('');
  }

  async send(input: string): Promise<string> {
    if (!this.started) throw new Error('dial first');
    this.inputs.push(input);
    this.text = this.inputs.join('*');
    return this.post(this.text);
  }

  /** Sends several inputs, one hop each; returns the last reply. */
  async walk(...inputs: string[]): Promise<string> {
    let last = '';
    for (const i of inputs) last = await this.send(i);
    return last;
  }

  /** Re-sends the last text, as a gateway does after a timeout. */
  retry(): Promise<string> {
    return this.post(this.text);
  }

  async post(text: string): Promise<string> {
    const hop = await postUssd(this.next(), { sessionId: this.sessionId, serviceCode: this.serviceCode, phoneNumber: this.phoneNumber, text });
    if (hop.status !== 200) throw new Error(`HTTP ${hop.status}: ${hop.text}`);
    return hop.text;
  }
}

/** What the recording double stores of a claim: the request with its id and status. */
type RecordedClaim = Parameters<UssdTwinsPort['prepareClaim']>[0] & { id: string; status: ClaimStatus; reasonRule?: ClaimSummary['reasonRule'] };

/**
 * Test double of area A's services for the twins port: records households and claims in memory
 * (a claim once its unit of work commits); the gateway's use cases make their own writes in
 * their transactions, as with area A. `decide` gives a new claim its status.
 */
export class RecordingTwins implements UssdTwinsPort {
  households: { did: string; name: string; customerId: string }[] = [];
  claims: RecordedClaim[] = [];
  constructor(private readonly decide: (claim: RecordedClaim) => RecordedClaim = (c) => c) {}
  async newHousehold(_trx: Sql, input: Parameters<UssdTwinsPort['newHousehold']>[1]) {
    const did = `did:ixo:entity:${randomBytes(16).toString('hex')}`;
    return { did, store: async () => void this.households.push({ did, name: input.name, customerId: input.customerId }) };
  }
  async prepareClaim(input: Parameters<UssdTwinsPort['prepareClaim']>[0]): Promise<KptClaimSubmission> {
    const found = this.claims.find((c) => c.idempotencyKey === input.idempotencyKey);
    const claim = found ?? this.decide({ ...input, id: `clm_${this.claims.length + 1}`, status: 'verified' });
    return {
      claimId: claim.id,
      admit: async () => found?.id,
      store: async () => {},
      stored: async () => (this.claims.push(claim), claim),
      replay: async () => claim.id,
      recover: async (err) => {
        throw err;
      },
      replayed: async () => claim,
    };
  }
  async claim(claimId: string) {
    return this.claims.find((c) => c.id === claimId);
  }
  async latestClaim(householdDid: string) {
    return this.claims.filter((c) => c.householdDid === householdDid).at(-1);
  }
  async collection() {
    return { id: 'ussd', selectionDesign: USSD_COLLECTION_DESIGN, takesGatewayClaims: true };
  }
}

/** Creates an account through the menus; returns its Customer ID. */
export async function createAccount(s: GatewaySession, pin = '24680', name = 'Jane Doe'): Promise<string> {
  await s.dial();
  const end = await s.walk('2', '2', name, 'Kibera', '2', pin, pin);
  const m = /^END Account created\. Your Customer ID is (\d+)\./.exec(end);
  expect(m, end).to.not.equal(null);
  return m![1]!;
}

/**
 * Logs fuel through the menus on `server`, one dial and login a day with its clock moved to that
 * day: `days` are [date, kg] pairs, or dates logged at 2 kg.
 */
export async function logFuelDays(
  server: { baseUrl: string; clock: { now: Date } },
  phone: string,
  customerId: string,
  pin: string,
  days: readonly (string | readonly [string, string])[],
): Promise<void> {
  for (const day of days) {
    const [date, kg] = typeof day === 'string' ? [day, '2'] : day;
    server.clock.now = new Date(`${date}T09:00:00Z`);
    const d = new GatewaySession([server.baseUrl], phone);
    await login(d, customerId, pin);
    await d.walk('1', '1', kg);
  }
}

/** Dials and logs in; returns the reply after the PIN. */
export async function login(s: GatewaySession, customerId: string, pin: string): Promise<string> {
  await s.dial();
  return s.walk('2', '1', customerId, pin);
}

