// Cosmos LegacyDec: a decimal with 18 fractional digits. On the wire (gogoproto customtype) it
// is the integer scaled by 10^18 as a string; JSON clients expect "0.100000000000000000".
const PRECISION = 18;

/** "0.1" -> "100000000000000000"; throws on anything that is not a plain decimal. */
export function legacyDecToWire(decimal: string): string {
  const m = /^(-?)(\d+)(?:\.(\d{1,18}))?$/.exec(decimal.trim());
  if (!m) throw new Error(`not a decimal with at most ${PRECISION} places: ${decimal}`);
  const scaled = BigInt(m[2]! + (m[3] ?? '').padEnd(PRECISION, '0'));
  return (m[1] && scaled !== 0n ? '-' : '') + scaled.toString();
}

/** "100000000000000000" -> "0.100000000000000000"; a value that is not an integer is returned as is. */
export function legacyDecFromWire(wire: string): string {
  if (wire === '') return `0.${'0'.repeat(PRECISION)}`;
  const m = /^(-?)(\d+)$/.exec(wire);
  if (!m) return wire;
  const digits = m[2]!.replace(/^0+(?=\d)/, '').padStart(PRECISION + 1, '0');
  const sign = m[1] && /[1-9]/.test(digits) ? '-' : '';
  return `${sign}${digits.slice(0, -PRECISION)}.${digits.slice(-PRECISION)}`;
}
