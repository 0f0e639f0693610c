// A terminal USSD phone: dials a running Hearth and lets a person walk the menus. Like a telecom
// gateway it sends the cumulative `text` (every input so far joined by `*`) on each hop. The demo
// walks the whole household journey by itself and prints what the households saw.
import { randomBytes, randomInt } from 'node:crypto';
import { createInterface } from 'node:readline/promises';

export interface SimulatorOptions {
  url: string;
  phoneNumber: string;
  serviceCode: string;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

export class SimulatorConnectionError extends Error {}

/** A hop the server answered other than 200: the demo cannot go on (a gateway would show the text as END). */
export class SimulatorHopError extends SimulatorConnectionError {}

/** A hop's reply as a phone shows it; `refused` when the server answered other than 200 (shown as END). */
interface HopAnswer {
  reply: string;
  refused: boolean;
}

async function hop(opts: SimulatorOptions, sessionId: string, text: string): Promise<HopAnswer> {
  const res = await fetch(new URL('/api/ussd', opts.url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ sessionId, serviceCode: opts.serviceCode, phoneNumber: opts.phoneNumber, text, networkCode: '99999' }).toString(),
  }).catch((err: Error) => {
    throw new SimulatorConnectionError(`Cannot reach ${opts.url} (${(err.cause as Error | undefined)?.message ?? err.message}). Is the server running (make start)?`);
  });
  const body = await res.text();
  return res.status === 200 ? { reply: body, refused: false } : { reply: `END (HTTP ${res.status}) ${body}`, refused: true };
}

/** Runs sessions until the person types /quit (or input ends). */
export async function runSimulator(opts: SimulatorOptions): Promise<void> {
  const out = opts.output ?? process.stdout;
  const rl = createInterface({ input: opts.input ?? process.stdin, output: out, terminal: false });
  const write = (s: string) => out.write(s + '\n');
  // The iterator buffers lines typed (or piped) ahead of the prompt.
  const lines = rl[Symbol.asyncIterator]();
  const ask = async (prompt: string) => {
    out.write(prompt);
    const next = await lines.next();
    return next.done ? undefined : String(next.value);
  };
  write(`Dialling ${opts.serviceCode} as ${opts.phoneNumber} on ${opts.url}. Type /quit to hang up and leave.`);
  try {
    for (;;) {
      const sessionId = `sim_${randomBytes(6).toString('hex')}`;
      const inputs: string[] = [];
      let { reply } = await hop(opts, sessionId, '');
      while (reply.startsWith('CON ')) {
        write('\n' + reply.slice(4));
        const line = await ask('> ');
        if (line === undefined || line.trim() === '/quit') return;
        inputs.push(line.trim());
        ({ reply } = await hop(opts, sessionId, inputs.join('*')));
      }
      write('\n' + reply.replace(/^END /, '') + '\n[session ended]');
      const again = await ask('Press Enter to dial again, or type /quit: ');
      if (again === undefined || again.trim() === '/quit') return;
    }
  } finally {
    rl.close();
  }
}

/** One dialled session of the demo: its inputs in order, printed with each reply; the last reply. */
async function demoSession(opts: SimulatorOptions, inputs: string[], write: (s: string) => void): Promise<string> {
  const sessionId = `demo_${randomBytes(6).toString('hex')}`;
  write(`(dial ${opts.serviceCode})`);
  const answered = async (text: string) => {
    const { reply, refused } = await hop(opts, sessionId, text);
    write(reply);
    if (refused) throw new SimulatorHopError(`The demo stopped: the server refused a hop (${reply.slice(4)}).`);
    return reply;
  };
  let reply = await answered('');
  for (let i = 0; i < inputs.length && reply.startsWith('CON '); i++) {
    write(`> ${inputs[i]}`);
    reply = await answered(inputs.slice(0, i + 1).join('*'));
  }
  write('');
  return reply;
}

/**
 * The household journey against a running server, with its defaults: two new households on the
 * two stoves (one in English, one in Swahili) create accounts, log today, yesterday and the day
 * before, send their claims, then see their Customer ID again, log in with it and check the
 * status and what the next claim needs. Prints the transcript; throws when an
 * account cannot be created (the rest of the journey needs its Customer ID) or the server refuses
 * a hop (SimulatorHopError: rate-limited, say), so the command fails.
 */
export async function runDemo(opts: Omit<SimulatorOptions, 'phoneNumber' | 'input'>): Promise<void> {
  const out = opts.output ?? process.stdout;
  const write = (s: string) => out.write(s + '\n');
  const households = [
    { title: 'Amina, in English, cooks on an old stove', language: [], name: 'Amina Otieno', stove: '1', pin: '24680', kg: ['3', '3.5', '2.5'] },
    { title: 'Baraka, in Kiswahili, cooks on a new clean stove', language: ['9', '2'], name: 'Baraka Mwangi', stove: '2', pin: '13579', kg: ['2', '2.5', '1.5'] },
  ].map((h) => ({ ...h, phone: `+2547${randomInt(10_000_000, 100_000_000)}`, customerId: '' }));
  const run = async (h: (typeof households)[number], what: string, inputs: string[]) => {
    write(`--- ${h.title}: ${what} ---`);
    return demoSession({ ...opts, phoneNumber: h.phone }, inputs, write);
  };
  for (const h of households) {
    const created = await run(h, 'create an account', [...h.language, '2', '2', h.name, '00', h.stove, h.pin, h.pin]);
    const id = /\b(\d{8})\b/.exec(created)?.[1];
    if (!id) throw new SimulatorConnectionError(`The demo could not create an account: ${created}`);
    h.customerId = id;
  }
  const login = (h: (typeof households)[number]) => ['2', '1', h.customerId, h.pin];
  for (const h of households) {
    const [dayBefore, yesterday, today] = h.kg;
    await run(h, 'log the day before yesterday, yesterday and today, then send the claim', [
      ...login(h), '1', '3', dayBefore!, '1', '2', yesterday!, '1', '1', today!, '3', '1', '1', '1', '1',
    ]);
  }
  // Without the Customer ID: the phone's PIN shows it and logs in, in the same session.
  for (const h of households) await run(h, 'forgot the Customer ID: see it, log in, check the claim status and what the next claim needs', ['2', '3', h.pin, '1', '4', '0', '3']);
}
