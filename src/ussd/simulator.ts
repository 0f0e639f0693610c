// A terminal USSD phone: dials a running Hearth and lets a person walk the menus. Like a telecom
// gateway it sends the cumulative `text` (every input so far joined by `*`) on each hop.
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline/promises';

export interface SimulatorOptions {
  url: string;
  phoneNumber: string;
  serviceCode: string;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

export class SimulatorConnectionError extends Error {}

async function hop(opts: SimulatorOptions, sessionId: string, text: string): Promise<string> {
  const res = await fetch(new URL('/api/ussd', opts.url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ sessionId, serviceCode: opts.serviceCode, phoneNumber: opts.phoneNumber, text, networkCode: '99999' }).toString(),
  }).catch((err: Error) => {
    throw new SimulatorConnectionError(`Cannot reach ${opts.url} (${(err.cause as Error | undefined)?.message ?? err.message}). Is the server running (make start)?`);
  });
  const body = await res.text();
  if (res.status !== 200) return `END (HTTP ${res.status}) ${body}`;
  return body;
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
      let reply = await hop(opts, sessionId, '');
      while (reply.startsWith('CON ')) {
        write('\n' + reply.slice(4));
        const line = await ask('> ');
        if (line === undefined || line.trim() === '/quit') return;
        inputs.push(line.trim());
        reply = await hop(opts, sessionId, inputs.join('*'));
      }
      write('\n' + reply.replace(/^END /, '') + '\n[session ended]');
      const again = await ask('Press Enter to dial again, or type /quit: ');
      if (again === undefined || again.trim() === '/quit') return;
    }
  } finally {
    rl.close();
  }
}
