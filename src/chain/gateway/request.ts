// Builds the gRPC request message of a route from path variables and query parameters, the
// way grpc-gateway does: `a.b=c` sets nested field a.b (proto name or lowerCamel JSON name),
// unknown parameters are ignored, a value that does not parse is a 400. The v1 dialect is
// grpc-gateway v1.16 on a Cosmos node, ported from its runtime (query.go, convert.go), its
// generated handlers and the Go library they call: integers parse as strconv with base 0 (0x1f,
// 0o17, 017, 0b101, 1_000), bytes as padded base64, a parameter given twice takes its first value,
// a query url.ParseQuery refuses is a 400, and a 400 says what Go says. The v2 dialect reads plain
// decimal integers, lenient base64, and refuses a repeated parameter.
import { create, ScalarType, type DescEnum, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { FieldError } from '../../platform/http/errors.ts';
import type { GatewayStyle } from '../services.ts';

export class RequestParseError extends Error {
  /** `message` replaces the "name: problem; ..." summary (v1 answers with Go's error text). */
  constructor(
    readonly fieldErrors: FieldError[],
    message?: string,
  ) {
    super(
      message ??
        fieldErrors
          .map((e) => {
            const name = e.pointer.replace(/^\/(query|params)\/?/, '');
            return name ? `${name}: ${e.message}` : e.message;
          })
          .join('; '),
    );
  }
}

type Init = Record<string, unknown>;

// strconv.ParseBool's spellings, which v2 accepts too.
const BOOL_VALUES: Record<string, boolean> = { true: true, True: true, TRUE: true, t: true, T: true, '1': true, false: false, False: false, FALSE: false, f: false, F: false, '0': false };

const is64Bit = (type: ScalarType) =>
  type === ScalarType.INT64 || type === ScalarType.UINT64 || type === ScalarType.SINT64 || type === ScalarType.FIXED64 || type === ScalarType.SFIXED64;
const isUnsigned = (type: ScalarType) => type === ScalarType.UINT32 || type === ScalarType.FIXED32 || type === ScalarType.UINT64 || type === ScalarType.FIXED64;

const findField = (desc: DescMessage, name: string): DescField | undefined => desc.fields.find((f) => f.name === name || f.jsonName === name);

/** Resolves a dotted parameter name to the fields along its path; undefined when unknown or not a string leaf. */
function resolvePath(desc: DescMessage, name: string): DescField[] | undefined {
  const path: DescField[] = [];
  let current: DescMessage | undefined = desc;
  for (const part of name.split('.')) {
    if (!current) return undefined;
    const field = findField(current, part);
    if (!field) return undefined;
    path.push(field);
    current = field.fieldKind === 'message' ? field.message : undefined;
  }
  const last = path[path.length - 1]!;
  // Only scalar, enum or repeated scalar leaves can come from a string.
  if (last.fieldKind === 'message' || last.fieldKind === 'map') return undefined;
  if (last.fieldKind === 'list' && last.listKind === 'message') return undefined;
  return path;
}

function setPath(init: Init, path: DescField[], value: unknown): void {
  let target = init;
  for (const field of path.slice(0, -1)) {
    target[field.localName] ??= {};
    target = target[field.localName] as Init;
  }
  target[path[path.length - 1]!.localName] = value;
}

// ---------------------------------------------------------------------------------------------
// v1. Go strings are bytes, so v1 holds a value as a byte string (one char per byte, Buffer's
// 'latin1'): errors then quote and count bytes as Go does.

const toGoBytes = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const fromGoBytes = (b: string) => Buffer.from(b, 'latin1').toString('utf8');

/** A Go function failed; the message is its error text. */
class GoError extends Error {}

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const GO_ESCAPES: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r' };
// unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
const isGoPrint = (r: number) => (r < 0x80 ? r >= 0x20 && r < 0x7f : /[\p{L}\p{M}\p{N}\p{P}\p{S}]/u.test(String.fromCodePoint(r)));

/** The rune at b[i] and its width as utf8.DecodeRune reads them; undefined for an invalid byte. */
function goRuneAt(b: string, i: number): [number, number] | undefined {
  const c0 = b.charCodeAt(i);
  if (c0 < 0x80) return [c0, 1];
  const cont = (k: number, lo = 0x80, hi = 0xbf) => {
    const c = b.charCodeAt(i + k);
    return c >= lo && c <= hi ? c & 0x3f : -1;
  };
  if (c0 >= 0xc2 && c0 <= 0xdf) {
    const c1 = cont(1);
    return c1 < 0 ? undefined : [((c0 & 0x1f) << 6) | c1, 2];
  }
  if (c0 >= 0xe0 && c0 <= 0xef) {
    const [c1, c2] = [cont(1, c0 === 0xe0 ? 0xa0 : 0x80, c0 === 0xed ? 0x9f : 0xbf), cont(2)];
    return c1 < 0 || c2 < 0 ? undefined : [((c0 & 0x0f) << 12) | (c1 << 6) | c2, 3];
  }
  if (c0 >= 0xf0 && c0 <= 0xf4) {
    const [c1, c2, c3] = [cont(1, c0 === 0xf0 ? 0x90 : 0x80, c0 === 0xf4 ? 0x8f : 0xbf), cont(2), cont(3)];
    return c1 < 0 || c2 < 0 || c3 < 0 ? undefined : [((c0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 4];
  }
  return undefined;
}

/** strconv.Quote of a byte string. */
function goQuote(b: string): string {
  let out = '"';
  for (let i = 0; i < b.length; ) {
    const rune = goRuneAt(b, i);
    if (!rune) {
      out += `\\x${hex(b.charCodeAt(i), 2)}`;
      i++;
      continue;
    }
    const [r, width] = rune;
    i += width;
    if (r === 0x22 || r === 0x5c) out += `\\${String.fromCharCode(r)}`;
    else if (isGoPrint(r)) out += String.fromCodePoint(r);
    else if (GO_ESCAPES[r]) out += GO_ESCAPES[r];
    else if (r < 0x20 || r === 0x7f) out += `\\x${hex(r, 2)}`;
    else if (r < 0x10000) out += `\\u${hex(r, 4)}`;
    else out += `\\U${hex(r, 8)}`;
  }
  return `${out}"`;
}

const numError = (fn: string, input: string, kind: 'syntax' | 'range') =>
  new GoError(`strconv.${fn}: parsing ${goQuote(input)}: ${kind === 'syntax' ? 'invalid syntax' : 'value out of range'}`);

/** strconv's underscoreOK: an underscore only between digits, or between a base prefix and a digit. */
function goUnderscoreOK(s: string): boolean {
  let saw = '^';
  let i = 0;
  if (s[0] === '-' || s[0] === '+') s = s.slice(1);
  const hexDigits = /^0[xX]/.test(s);
  if (/^0[bBoOxX]/.test(s)) {
    i = 2;
    saw = '0';
  }
  for (; i < s.length; i++) {
    const c = s[i]!;
    if (/[0-9]/.test(c) || (hexDigits && /[a-fA-F]/.test(c))) {
      saw = '0';
    } else if (c === '_') {
      if (saw !== '0') return false;
      saw = '_';
    } else {
      if (saw === '_') return false;
      saw = '!';
    }
  }
  return saw !== '_';
}

/** strconv.ParseUint(s, 0, bitSize) before its error is wrapped: the value, or which error comes first. */
function goParseUintCore(s: string, bitSize: number): bigint | 'syntax' | 'range' {
  if (s === '') return 'syntax';
  let base = 10;
  let digits = s;
  if (s[0] === '0') {
    const prefixed = s.length >= 3 ? ({ b: 2, o: 8, x: 16 } as Record<string, number>)[s[1]!.toLowerCase()] : undefined;
    base = prefixed ?? 8;
    digits = s.slice(prefixed ? 2 : 1);
  }
  const max = (1n << BigInt(bitSize)) - 1n;
  let n = 0n;
  let underscores = false;
  for (const c of digits) {
    if (c === '_') {
      underscores = true;
      continue;
    }
    const d = /[0-9a-zA-Z]/.test(c) ? parseInt(c, 36) : base;
    if (d >= base) return 'syntax';
    // Go reports the overflow where it happens, before any later bad digit or underscore.
    n = n * BigInt(base) + BigInt(d);
    if (n > max) return 'range';
  }
  return underscores && !goUnderscoreOK(s) ? 'syntax' : n;
}

function goParseUint(s: string, bitSize: number): bigint {
  const n = goParseUintCore(s, bitSize);
  if (typeof n !== 'bigint') throw numError('ParseUint', s, n);
  return n;
}

function goParseInt(s: string, bitSize: number): bigint {
  if (s === '') throw numError('ParseInt', s, 'syntax');
  const negative = s[0] === '-';
  const un = goParseUintCore(negative || s[0] === '+' ? s.slice(1) : s, bitSize);
  if (un === 'syntax') throw numError('ParseInt', s, 'syntax');
  const cutoff = 1n << BigInt(bitSize - 1);
  if (un === 'range' || (negative ? un > cutoff : un >= cutoff)) throw numError('ParseInt', s, 'range');
  return negative ? -un : un;
}

const GO_DECIMAL_FLOAT = /^[+-]?([0-9_]*(?:\.[0-9_]*)?)(?:[eE][+-]?[0-9][0-9_]*)?$/;
const GO_HEX_FLOAT = /^([+-]?)0[xX]([0-9a-fA-F_]*)(?:\.([0-9a-fA-F_]*))?[pP]([+-]?[0-9][0-9_]*)$/;

/** strconv.ParseFloat(s, bitSize): Go's float syntax (a hex mantissa needs a p exponent); out of range when it overflows. */
function goParseFloat(s: string, bitSize: 32 | 64): number {
  const special = /^([+-]?)(inf|infinity)$/i.exec(s);
  if (special) return special[1] === '-' ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return NaN;
  const underscoresOK = !s.includes('_') || goUnderscoreOK(s);
  const decimal = GO_DECIMAL_FLOAT.exec(s);
  const hexFloat = GO_HEX_FLOAT.exec(s);
  let value: number;
  if (decimal && /[0-9]/.test(decimal[1]!) && underscoresOK) {
    value = Number(s.replace(/_/g, ''));
  } else if (hexFloat && /[0-9a-fA-F]/.test(hexFloat[2]! + (hexFloat[3] ?? '')) && underscoresOK) {
    const [sign, int, frac, exp] = hexFloat.slice(1).map((g) => (g ?? '').replace(/_/g, ''));
    const mantissa = Number(BigInt(`0x${int}${frac}`));
    value = (sign === '-' ? -1 : 1) * mantissa * 2 ** (Number(exp) - 4 * frac!.length);
  } else {
    throw numError('ParseFloat', s, 'syntax');
  }
  if (!Number.isFinite(bitSize === 32 ? Math.fround(value) : value)) throw numError('ParseFloat', s, 'range');
  return value;
}

const STD_BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const URL_BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Where a padded base64.Encoding's DecodeString fails (its decodeQuantum, quantum by quantum); undefined when it does not. */
function goBase64ErrorAt(src: string, alphabet: string): number | undefined {
  const skipNewlines = (i: number) => {
    while (i < src.length && (src[i] === '\n' || src[i] === '\r')) i++;
    return i;
  };
  let si = 0;
  while (si < src.length) {
    for (let j = 0; j < 4; j++) {
      if (si === src.length) return j === 0 ? undefined : si - j;
      const c = src[si++]!;
      if (alphabet.includes(c)) continue;
      if (c === '\n' || c === '\r') {
        j--;
        continue;
      }
      if (c !== '=' || j < 2) return si - 1;
      if (j === 2) {
        si = skipNewlines(si);
        if (si === src.length) return src.length;
        if (src[si] !== '=') return si - 1;
        si++;
      }
      si = skipNewlines(si);
      return si < src.length ? si : undefined;
    }
  }
  return undefined;
}

/**
 * grpc-gateway v1's runtime conversion of each scalar kind (convert.go). `raw` is a Go byte
 * string (one char per byte, as Buffer's 'latin1'; ASCII is itself); throws Go's error text.
 */
export function parseGoScalar(type: ScalarType, raw: string): unknown {
  switch (type) {
    case ScalarType.STRING:
      return fromGoBytes(raw);
    case ScalarType.BOOL: {
      const v = BOOL_VALUES[raw];
      if (v === undefined) throw numError('ParseBool', raw, 'syntax');
      return v;
    }
    case ScalarType.BYTES: {
      // runtime.Bytes tries StdEncoding, then URLEncoding, and returns URLEncoding's error.
      if (goBase64ErrorAt(raw, STD_BASE64) !== undefined) {
        const at = goBase64ErrorAt(raw, URL_BASE64);
        if (at !== undefined) throw new GoError(`illegal base64 data at input byte ${at}`);
      }
      return new Uint8Array(Buffer.from(raw.replace(/[\r\n]/g, '').replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
    }
    case ScalarType.DOUBLE:
      return goParseFloat(raw, 64);
    case ScalarType.FLOAT:
      return goParseFloat(raw, 32);
    default: {
      const bitSize = is64Bit(type) ? 64 : 32;
      const n = isUnsigned(type) ? goParseUint(raw, bitSize) : goParseInt(raw, bitSize);
      return bitSize === 64 ? n : Number(n);
    }
  }
}

/** The Go type name of a generated enum or message as %T and reflect.Type print it: package.Outer_Inner. */
function goTypeName(desc: DescEnum | DescMessage): string {
  const goPackage = desc.file.proto.options?.goPackage ?? '';
  const pkg = goPackage.includes(';') ? goPackage.slice(goPackage.indexOf(';') + 1) : goPackage.slice(goPackage.lastIndexOf('/') + 1);
  const protoPackage = desc.file.proto.package;
  return `${pkg}.${desc.typeName.slice(protoPackage ? protoPackage.length + 1 : 0).replace(/\./g, '_')}`;
}

function parseGoLeaf(field: DescField, raw: string, source: 'path' | 'query'): unknown {
  const kind = field.fieldKind === 'list' ? field.listKind : field.fieldKind;
  if (kind !== 'enum') return parseGoScalar(field.scalar!, raw);
  const e = field.enum!;
  const byName = e.values.find((v) => v.name === raw);
  if (byName) return byName.number;
  const known = (n: number) => e.values.some((v) => v.number === n);
  if (source === 'path') {
    // runtime.Enum: else a number read by runtime.Int32 (base 0).
    let n: number | undefined;
    try {
      n = Number(goParseInt(raw, 32));
    } catch {
      n = undefined;
    }
    if (n !== undefined && known(n)) return n;
    throw new GoError(`${fromGoBytes(raw)} is not valid`);
  }
  // query.go's convertEnum: else strconv.Atoi (decimal, int64), compared and stored as int32.
  const n = /^[+-]?[0-9]+$/.test(raw) ? BigInt(raw) : undefined;
  const int32 = n !== undefined && n === BigInt.asIntN(64, n) ? Number(BigInt.asIntN(32, n)) : undefined;
  if (int32 !== undefined && known(int32)) return int32;
  throw new GoError(`${fromGoBytes(raw)} is not a valid ${goTypeName(e)}`);
}

/** url.QueryUnescape of a byte string. */
function goQueryUnescape(s: string): string {
  const bad = /%(?![0-9A-Fa-f]{2})/.exec(s);
  if (bad) throw new GoError(`invalid URL escape ${goQuote(s.slice(bad.index, bad.index + 3))}`);
  return s.replace(/\+/g, ' ').replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/**
 * Request.ParseForm's url.ParseQuery: the values by name, names in the order they first appear
 * (Go's url.Values is a map: it has no order). Its error is the first bad escape, unless a pair
 * holds a `;`, which wins.
 */
function goParseQuery(query: string): Map<string, string[]> {
  const form = new Map<string, string[]>();
  let error: string | undefined;
  for (const pair of toGoBytes(query).split('&')) {
    if (pair.includes(';')) {
      error = 'invalid semicolon separator in query';
      continue;
    }
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    try {
      const key = goQueryUnescape(eq < 0 ? pair : pair.slice(0, eq));
      const value = goQueryUnescape(eq < 0 ? '' : pair.slice(eq + 1));
      const values = form.get(key);
      if (values) values.push(value);
      else form.set(key, [value]);
    } catch (err) {
      error ??= (err as GoError).message;
    }
  }
  if (error) throw new RequestParseError([{ pointer: '/query', message: error }], error);
  return form;
}

/**
 * The mux's own Request.ParseForm for a form POST it reroutes (X-HTTP-Method-Override, or the
 * path length fallback): a query or form Go cannot parse is a 400 before any handler runs.
 */
export function assertGoForm(query: string): void {
  goParseQuery(query);
}

/**
 * query.go's walk along a parameter name: undefined when a part names no field (ignored), a
 * GoError where Go refuses the path.
 */
function resolveGoPath(desc: DescMessage, parts: string[]): DescField[] | undefined {
  const path: DescField[] = [];
  let current = desc;
  for (const [i, part] of parts.entries()) {
    const field = findField(current, part);
    if (!field) return undefined;
    path.push(field);
    if (field.fieldKind === 'message') {
      current = field.message;
      continue;
    }
    if (i === parts.length - 1) break;
    // Go's reflect kinds: bytes and repeated fields are slices.
    if (field.fieldKind === 'list' || (field.fieldKind === 'scalar' && field.scalar === ScalarType.BYTES)) {
      throw new GoError(`unexpected repeated field in ${parts.join('.')}`);
    }
    throw new GoError(`unexpected nested field ${parts[i + 1]} in ${parts.slice(0, i + 1).join('.')}`);
  }
  const leaf = path[path.length - 1]!;
  // The query protos hold no well-known types, which Go would parse from a string.
  if (leaf.fieldKind === 'message') throw new GoError(`field type *${goTypeName(leaf.message)} is not supported in query parameters`);
  // Maps and repeated messages take Go's map syntax, which no query proto needs.
  if (leaf.fieldKind === 'map' || (leaf.fieldKind === 'list' && leaf.listKind === 'message')) return undefined;
  return path;
}

// query.go's valuesKeyRegexp: `name[k]=v` is name with the values k, v (Go's `.` stops at \n only).
// The greedy name already ends at the last `[`: the value excludes `[`, so the match is linear
// (RE2 is; a backtracking `[^\n]*` there was quadratic in a run of `[`).
const GO_VALUES_KEY = /^([^\n]*)\[([^\n[]*)\]$/;

/**
 * A generated v1 handler: each path variable (a failure is "type mismatch, parameter: <template
 * variable>, error: ..."), then ParseForm, then PopulateQueryParameters, which stops at the first
 * failure with Go's bare error text. Go visits the parameters in map order, so with several bad
 * ones its answer varies; Hearth names the first bad one in the query. When two names set one
 * field (count_total and countTotal) the first wins.
 */
function buildGoRequest<D extends DescMessage>(desc: D, pathVars: Record<string, string>, query: string): MessageShape<D> {
  const init: Init = {};
  for (const [name, raw] of Object.entries(pathVars)) {
    const path = resolvePath(desc, name)!;
    try {
      setPath(init, path, parseGoLeaf(path[path.length - 1]!, toGoBytes(raw), 'path'));
    } catch (err) {
      if (!(err instanceof GoError)) throw err;
      throw new RequestParseError([{ pointer: `/params/${name}`, message: err.message }], `type mismatch, parameter: ${name}, error: ${err.message}`);
    }
  }
  // A handler whose path binds every field reads no query (its generator's HasQueryParam).
  if (desc.fields.every((f) => Object.hasOwn(pathVars, f.name))) return create(desc, init as never);
  // The handler's filter: a parameter under a path variable's field path is skipped.
  const filters = Object.keys(pathVars).map((v) => v.split('.'));
  const setByQuery = new Set<string>();
  for (const [key, values] of goParseQuery(query)) {
    const indexed = GO_VALUES_KEY.exec(key);
    const name = indexed ? indexed[1]! : key;
    const all = indexed ? [indexed[2]!, ...values] : values;
    const parts = name.split('.');
    if (filters.some((f) => f.every((p, i) => parts[i] === p))) continue;
    try {
      const path = resolveGoPath(desc, parts);
      if (!path) continue;
      const leaf = path[path.length - 1]!;
      const value = leaf.fieldKind === 'list' ? all.map((v) => parseGoLeaf(leaf, v, 'query')) : parseGoLeaf(leaf, all[0]!, 'query');
      const field = path.map((f) => f.name).join('.');
      if (setByQuery.has(field)) continue;
      setByQuery.add(field);
      setPath(init, path, value);
    } catch (err) {
      if (!(err instanceof GoError)) throw err;
      throw new RequestParseError([{ pointer: `/query/${fromGoBytes(name)}`, message: err.message }], err.message);
    }
  }
  return create(desc, init as never);
}

// ---------------------------------------------------------------------------------------------
// v2.

const INT_RANGES: Partial<Record<ScalarType, [bigint, bigint]>> = {
  [ScalarType.INT32]: [-(2n ** 31n), 2n ** 31n - 1n],
  [ScalarType.SINT32]: [-(2n ** 31n), 2n ** 31n - 1n],
  [ScalarType.SFIXED32]: [-(2n ** 31n), 2n ** 31n - 1n],
  [ScalarType.UINT32]: [0n, 2n ** 32n - 1n],
  [ScalarType.FIXED32]: [0n, 2n ** 32n - 1n],
  [ScalarType.INT64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [ScalarType.SINT64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [ScalarType.SFIXED64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [ScalarType.UINT64]: [0n, 2n ** 64n - 1n],
  [ScalarType.FIXED64]: [0n, 2n ** 64n - 1n],
};

function parseDecimal(raw: string): bigint {
  if (!/^-?\d+$/.test(raw)) throw new Error('must be an integer');
  return BigInt(raw);
}

/** A scalar from its text, as v2 reads it (v1: parseGoScalar). */
export function parseScalar(type: ScalarType, raw: string): unknown {
  switch (type) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL: {
      const v = BOOL_VALUES[raw];
      if (v === undefined) throw new Error('must be true or false');
      return v;
    }
    case ScalarType.BYTES: {
      // URL query decoding turns an unescaped "+" into a space; base64 has no spaces.
      const b64 = raw.replace(/ /g, '+');
      if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b64) || b64.replace(/=+$/, '').length % 4 === 1) throw new Error('must be base64');
      return new Uint8Array(Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
    }
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = Number(raw);
      if (raw.trim() === '' || Number.isNaN(n)) throw new Error('must be a number');
      return n;
    }
    default: {
      const n = parseDecimal(raw);
      const [min, max] = INT_RANGES[type]!;
      if (n < min || n > max) throw new Error(`must be between ${min} and ${max}`);
      return is64Bit(type) ? n : Number(n);
    }
  }
}

function parseLeaf(field: DescField, raw: string): unknown {
  const kind = field.fieldKind === 'list' ? field.listKind : field.fieldKind;
  if (kind === 'enum') {
    const e = field.enum!;
    const byName = e.values.find((v) => v.name === raw);
    if (byName) return byName.number;
    const n = /^-?\d+$/.test(raw) ? Number(raw) : undefined;
    if (n !== undefined && e.values.some((v) => v.number === n)) return n;
    throw new Error(`must be one of ${e.values.map((v) => v.name).join(', ')}`);
  }
  return parseScalar(field.scalar!, raw);
}

/**
 * Path variables are already decoded; `query` is the raw query string (without "?"). In v2 a
 * field bound by the path cannot be set by the query.
 */
export function buildRequest<D extends DescMessage>(desc: D, pathVars: Record<string, string>, query: string, dialect: GatewayStyle): MessageShape<D> {
  if (dialect === 'v1') return buildGoRequest(desc, pathVars, query);
  const init: Init = {};
  const errors: FieldError[] = [];
  const bound = new Set<string>();
  for (const [name, raw] of Object.entries(pathVars)) {
    const path = resolvePath(desc, name)!;
    bound.add(path.map((f) => f.name).join('.'));
    try {
      setPath(init, path, parseLeaf(path[path.length - 1]!, raw));
    } catch (err) {
      errors.push({ pointer: `/params/${name}`, message: (err as Error).message });
    }
  }
  const seen = new Map<string, { path: DescField[]; values: string[] }>();
  for (const [name, raw] of new URLSearchParams(query)) {
    const path = resolvePath(desc, name);
    if (!path) continue;
    const key = path.map((f) => f.name).join('.');
    if (bound.has(key)) continue;
    const entry = seen.get(key) ?? { path, values: [] };
    entry.values.push(raw);
    seen.set(key, entry);
  }
  for (const [key, { path, values }] of seen) {
    const leaf = path[path.length - 1]!;
    try {
      if (leaf.fieldKind === 'list') setPath(init, path, values.map((v) => parseLeaf(leaf, v)));
      else if (values.length > 1) throw new Error('is given more than once');
      else setPath(init, path, parseLeaf(leaf, values[0]!));
    } catch (err) {
      errors.push({ pointer: `/query/${key}`, message: (err as Error).message });
    }
  }
  if (errors.length) throw new RequestParseError(errors);
  return create(desc, init as never);
}
