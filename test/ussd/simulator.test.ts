import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { runDemo, runSimulator, SimulatorHopError } from '../../src/ussd/simulator.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { startUssdServer } from './helpers.ts';

forEachDatabase('USSD terminal simulator', (t) => {
  it('dials, sends cumulative text for typed inputs, and stops on /quit', async () => {
    const server = await startUssdServer(t.db);
    const seen: string[] = [];
    const original = globalThis.fetch;
    globalThis.fetch = (async (url: string | URL | Request, init?: RequestInit) => {
      seen.push(new URLSearchParams(init?.body as string).get('text')!);
      return original(url, init);
    });
    try {
      const input = new PassThrough();
      const output = new PassThrough();
      let printed = '';
      output.on('data', (c) => (printed += String(c)));
      const done = runSimulator({ url: server.baseUrl, phoneNumber: '+254700000009', serviceCode: '*384#', input, output });
      input.write('1\n3\n98\n*\n*\n/quit\n');
      await done;
      expect(seen).to.deep.equal(['', '1', '1*3', '1*3*98', '1*3*98**', '1*3*98****']);
      expect(printed).to.include('Welcome to Hearth');
      expect(printed).to.include('The kitchen test');
      expect(printed).to.include('Goodbye.');
      expect(printed).to.include('[session ended]');
    } finally {
      globalThis.fetch = original;
      await server.stop();
    }
  });

  it('the demo walks the household journey in English and Kiswahili: both claims end accepted', async () => {
    const server = await startUssdServer(t.db, {}, { clock: { now: new Date() } });
    try {
      const output = new PassThrough();
      let printed = '';
      output.on('data', (c) => (printed += String(c)));
      await runDemo({ url: server.baseUrl, serviceCode: '*384*1234#', output });
      expect(printed).to.match(/END Claim sent\. Reference [A-Z0-9]{8}\. Status: Waiting\./);
      expect(printed).to.match(/END Ripoti imetumwa\. Nambari ya kumbukumbu [A-Z0-9]{8}\. Hali: Imekubaliwa\./);
      expect(printed).to.match(/CON Claim [A-Z0-9]{8} of \d{1,2} [A-Z][a-z]+: Accepted\./);
      expect(printed).to.match(/CON Ripoti [A-Z0-9]{8} ya \d{1,2} [A-Z][a-z]+: Imekubaliwa\./);
      // A forgotten Customer ID is shown and logs in; after the claim, what the next one needs.
      expect(printed).to.match(/CON Your Customer ID is \d{8}\. Keep it and your PIN safe\.\n1\. Log in\n0\. Back/);
      expect(printed).to.match(/CON Nambari yako ya mteja ni \d{8}\. .+\n1\. Ingia\n0\. Rudi/);
      expect(printed).to.include('CON A new claim needs 3 days in a row not yet sent. Log each of the next 3 days, starting tomorrow, then send.\nServices');
      expect(printed).to.include('CON Ripoti mpya inahitaji siku 3 mfululizo ambazo hazijatumwa. Weka kilo za siku 3 zijazo, kuanzia kesho, kisha tuma.\nHuduma');
    } finally {
      await server.stop();
    }
  });

  it('the demo fails (and its command exits non-zero) when the server refuses a hop, rate-limited say', async () => {
    const server = await startUssdServer(t.db, { USSD_RATE_LIMIT_PER_MINUTE: '5' }, { clock: { now: new Date() } });
    try {
      const output = new PassThrough();
      let printed = '';
      output.on('data', (c) => (printed += String(c)));
      let error: unknown;
      await runDemo({ url: server.baseUrl, serviceCode: '*384*1234#', output }).catch((e) => (error = e));
      expect(error).to.be.instanceOf(SimulatorHopError);
      expect(String(error)).to.match(/The demo stopped: the server refused a hop \(\(HTTP 429\) /);
      expect(printed).to.include('END (HTTP 429)');
    } finally {
      await server.stop();
    }
  });
});
