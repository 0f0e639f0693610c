import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { configWith, MAX_KG_PER_DAY } from '../../src/config.ts';
import { parse } from 'yaml';
import { parseKg } from '../../src/ussd/fuel.ts';
import { MAX_REPLY_CHARS, paginate, TEXT } from '../../src/ussd/menus.ts';
import { parse32ByteKey } from '../../src/platform/key-bytes.ts';
import { PinCipher, pinProblem, resolvePinKey } from '../../src/ussd/pin.ts';

describe('USSD PIN rules and encryption', () => {
  const cipher = new PinCipher(Buffer.alloc(32, 1));

  it('refuses trivial PINs and anything but 5 digits', () => {
    for (const p of ['00000', '77777', '12345', '34567', '54321', '98765']) expect(pinProblem(p), p).to.equal('trivial');
    for (const p of ['1234', '123456', '12a45', '', ' 1357']) expect(pinProblem(p), p).to.equal('format');
    for (const p of ['13579', '24680', '11223', '90123']) expect(pinProblem(p), p).to.equal(undefined);
  });

  it('AES-256-GCM with a fresh random IV per record; compares by decrypting', () => {
    const a = cipher.seal('13579');
    const b = cipher.seal('13579');
    expect(a).to.not.equal(b);
    expect(a.split('.')[1]).to.not.equal(b.split('.')[1]);
    expect(Buffer.from(a.split('.')[1]!, 'base64url')).to.have.length(12);
    expect(a).to.not.include('13579');
    expect(cipher.open(a)).to.equal('13579');
    expect(cipher.matches(a, '13579')).to.equal(true);
    expect(cipher.matches(a, '13578')).to.equal(false);
    expect(cipher.matches(a, '135791')).to.equal(false);
  });

  it('a tampered record or another key fails authentication', () => {
    const sealed = cipher.seal('13579');
    const parts = sealed.split('.');
    const data = Buffer.from(parts[3]!, 'base64url');
    data[0]! ^= 1;
    expect(() => cipher.open([parts[0], parts[1], parts[2], data.toString('base64url')].join('.'))).to.throw();
    expect(() => new PinCipher(Buffer.alloc(32, 2)).open(sealed)).to.throw();
  });

  it('parses 32-byte keys in hex and base64 only', () => {
    expect(parse32ByteKey('ab'.repeat(32))).to.have.length(32);
    expect(parse32ByteKey(Buffer.alloc(32, 9).toString('base64'))).to.have.length(32);
    expect(parse32ByteKey(Buffer.alloc(32, 9).toString('base64url'))).to.have.length(32);
    expect(parse32ByteKey(`${Buffer.alloc(32, 0xfb).toString('base64url')}=`)).to.deep.equal(Buffer.alloc(32, 0xfb));
    expect(parse32ByteKey('ab'.repeat(31))).to.equal(undefined);
    expect(parse32ByteKey(Buffer.alloc(16).toString('base64'))).to.equal(undefined);
    expect(parse32ByteKey('not a key')).to.equal(undefined);
    // Characters base64 does not know are never skipped into a different key of the right length.
    expect(Buffer.from(`${'A'.repeat(43)}@`, 'base64url')).to.have.length(32);
    expect(parse32ByteKey(`${'A'.repeat(43)}@`)).to.equal(undefined);
    expect(parse32ByteKey(`${'A'.repeat(20)}!!${'A'.repeat(23)}`)).to.equal(undefined);
  });

  it('development generates a key into DATA_DIR once, says so, and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-pin-'));
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    try {
      const config = configWith({ NODE_ENV: 'development', DATA_DIR: dir });
      const key = resolvePinKey(config, logger);
      expect(readFileSync(join(dir, 'pin-encryption.key'), 'utf8').trim()).to.equal(key.toString('hex'));
      expect(lines.join('')).to.include('generated a development key');
      expect(resolvePinKey(config, logger).equals(key)).to.equal(true);
      expect(lines.join('')).to.not.include(key.toString('hex'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('USSD pagination', () => {
  it('the ended and expired replies name the service code, unless a long code would overflow the screen', () => {
    expect(TEXT.ended('*384*1234#')).to.equal('END This session has ended. Please dial *384*1234# again.');
    const long = `*${'1*'.repeat(85)}1#`;
    expect(long.length).to.be.at.most(182);
    for (const reply of [TEXT.ended(long), TEXT.expired(long)]) {
      expect(reply.length).to.be.at.most(MAX_REPLY_CHARS);
      expect(reply).to.match(/^END .* Please dial again\.$/);
    }
  });

  it('keeps short screens whole', () => {
    expect(paginate({ end: false, lines: ['Hi', '1. A'], options: ['0. Back'] }, 0)).to.deep.equal({ reply: 'CON Hi\n1. A\n0. Back', pages: 1 });
  });

  it('splits long content into pages of at most 182 chars with 98. More, losing nothing', () => {
    const words = Array.from({ length: 120 }, (_, i) => `word${i}`);
    const screen = { end: false, lines: [words.join(' ')], options: ['0. Back'] };
    const first = paginate(screen, 0);
    expect(first.pages).to.be.greaterThan(2);
    const pages = Array.from({ length: first.pages }, (_, i) => paginate(screen, i).reply);
    for (const [i, p] of pages.entries()) {
      expect(p.length).to.be.at.most(MAX_REPLY_CHARS);
      expect(p.startsWith('CON ')).to.equal(true);
      expect(p.endsWith(i < pages.length - 1 ? '98. More\n0. Back' : '0. Back')).to.equal(true);
    }
    const text = pages.map((p) => p.slice(4).replace(/\n98\. More\n0\. Back$|\n0\. Back$/, '')).join(' ');
    expect(text.split(/\s+/)).to.deep.equal(words);
  });

  it('shows a notice first on the page asked for, that page keeping the content it has without one', () => {
    const words = Array.from({ length: 120 }, (_, i) => `word${i}`);
    const screen = { end: false, lines: [words.join(' ')], options: ['0. Back'] };
    const notice = 'Invalid choice. Try again.';
    const { pages } = paginate(screen, 0);
    expect(paginate({ ...screen, notice }, 0).pages).to.equal(pages);
    for (let i = 0; i < pages; i++) {
      const plain = paginate(screen, i).reply;
      const noted = paginate({ ...screen, notice }, i).reply;
      expect(noted).to.equal(`CON ${notice}\n${plain.slice(4)}`);
      expect(noted.length).to.be.at.most(MAX_REPLY_CHARS);
    }
    // A longer notice still fits: the pages make room for it.
    const long = 'A claim needs at least 3 days logged in a row, not yet claimed (you have 2).';
    for (let i = 0; i < paginate({ ...screen, notice: long }, 0).pages; i++) {
      const reply = paginate({ ...screen, notice: long }, i).reply;
      expect(reply.startsWith(`CON ${long}\n`)).to.equal(true);
      expect(reply.length).to.be.at.most(MAX_REPLY_CHARS);
    }
  });
});

describe('USSD_TIMEZONE', () => {
  it('defaults to UTC, takes an IANA zone and rejects an unknown one naming the variable', () => {
    expect(configWith().USSD_TIMEZONE).to.equal('UTC');
    expect(configWith({ USSD_TIMEZONE: 'Africa/Nairobi' }).USSD_TIMEZONE).to.equal('Africa/Nairobi');
    expect(() => configWith({ USSD_TIMEZONE: 'Mars/Olympus' })).to.throw(/USSD_TIMEZONE: must be an IANA time zone/);
  });
});

describe('USSD fuel amounts', () => {
  it("the most kg a day may hold is the contract's dailyLogs maximum, read from openapi/ itself", () => {
    const doc = parse(readFileSync('openapi/twins.yaml', 'utf8')) as { components: { schemas: { FuelMeasurements: { properties: { dailyLogs: { items: { maximum: number } } } } } } };
    expect(MAX_KG_PER_DAY).to.equal(doc.components.schemas.FuelMeasurements.properties.dailyLogs.items.maximum).and.to.equal(1000);
  });

  it('takes kg as households type them, up to that maximum, and nothing else', () => {
    expect(['2.5', '2,5', '.5', ' 3 ', '1000', '0.001', '999.999'].map(parseKg)).to.deep.equal([2.5, 2.5, 0.5, 3, 1000, 0.001, 999.999]);
    for (const refused of ['0', '0.0', '-1', '1000.001', '1001', '9999', '2.5555', '1e3', '2.5.1', '', 'abc', '0x10', '٢']) expect(parseKg(refused), refused).to.equal(undefined);
  });
});
