// RFC 8785 (JCS), which every claim CID and credential proof is computed over, against its
// author's published test data (vendored in vectors/rfc8785, see its SOURCE.md).
import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { jcs } from '../../src/twins/credentials/credentials.ts';

const dir = new URL('./vectors/rfc8785/', import.meta.url);
const text = (name: string) => readFileSync(new URL(name, dir), 'utf8');

describe('RFC 8785 JSON canonicalization: the reference test data', () => {
  const pairs = readdirSync(new URL('input/', dir)).sort();

  it('holds the five vendored pairs', () => {
    expect(pairs).to.deep.equal(['french.json', 'structures.json', 'unicode.json', 'values.json', 'weird.json']);
  });

  for (const name of pairs) {
    it(`input/${name} canonicalizes to output/${name} byte for byte`, () => {
      expect(Buffer.from(jcs(JSON.parse(text(`input/${name}`))), 'utf8').equals(readFileSync(new URL(`output/${name}`, dir)))).to.equal(true);
    });
  }

  it('numbers serialize as ECMAScript does (the sample lines of the ES6 number file)', () => {
    const lines = text('es6-numbers-sample.txt').trim().split('\n');
    expect(lines).to.have.length(7);
    for (const line of lines) {
      const [hex, expected] = line.split(',') as [string, string];
      const value = Buffer.from(hex.padStart(16, '0'), 'hex').readDoubleBE(0);
      expect(jcs(value), hex).to.equal(expected);
    }
  });
});
