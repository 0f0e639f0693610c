// Builds the gRPC request message of a route from path variables and query parameters, the
// way grpc-gateway does: `a.b=c` sets nested field a.b (proto name or lowerCamel JSON name),
// unknown parameters are ignored, a value that does not parse is a 400. The v1 dialect is
// grpc-gateway v1 on a Cosmos node: integers parse as Go's strconv with base 0 (0x1f, 0o17,
// 017, 0b101, 1_000), bytes as Go's padded base64, a parameter given twice takes its first
// value, and a query Go's url.ParseQuery refuses (a bad escape, a `;` separator) is a 400. The
// v2 dialect reads plain decimal integers, lenient base64, and refuses a repeated parameter.
import { create, ScalarType, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { FieldError } from '../../platform/http/errors.ts';

export class RequestParseError extends Error {
  constructor(readonly fieldErrors: FieldError[]) {
    super(
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

/** Resolves a dotted parameter name to the fields along its path; undefined when unknown. */
function resolvePath(desc: DescMessage, name: string): DescField[] | undefined {
  const path: DescField[] = [];
  let current: DescMessage | undefined = desc;
  for (const part of name.split('.')) {
    if (!current) return undefined;
    const field: DescField | undefined = current.fields.find((f) => f.name === part || f.jsonName === part);
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

const BOOL_VALUES: Record<string, boolean> = { true: true, True: true, TRUE: true, t: true, T: true, '1': true, false: false, False: false, FALSE: false, f: false, F: false, '0': false };

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

export type QueryDialect = 'v1' | 'v2';

const is64Bit = (type: ScalarType) =>
  type === ScalarType.INT64 || type === ScalarType.UINT64 || type === ScalarType.SINT64 || type === ScalarType.FIXED64 || type === ScalarType.SFIXED64;
const isUnsigned = (type: ScalarType) => type === ScalarType.UINT32 || type === ScalarType.FIXED32 || type === ScalarType.UINT64 || type === ScalarType.FIXED64;

const BASE_DIGITS: Record<number, string> = { 2: '[01]', 8: '[0-7]', 10: '[0-9]', 16: '[0-9A-Fa-f]' };
const BASE_PREFIX: Record<number, string> = { 2: '0b', 8: '0o', 16: '0x' };

/**
 * strconv.ParseInt / ParseUint with base 0: an optional sign (ParseInt only), then a 0x, 0o or
 * 0b prefix, or a leading 0 for octal, else decimal; underscores only between digits or right
 * after a prefix.
 */
function parseGoInteger(raw: string, unsigned: boolean): bigint {
  let s = raw;
  let negative = false;
  if (!unsigned && (s.startsWith('+') || s.startsWith('-'))) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  let base = 10;
  let digits = s;
  let prefixed = false;
  if (s.length >= 3 && s[0] === '0' && /[bBoOxX]/.test(s[1]!)) {
    base = { b: 2, o: 8, x: 16 }[s[1]!.toLowerCase() as 'b' | 'o' | 'x'];
    digits = s.slice(2);
    prefixed = true;
  } else if (s.length > 1 && s[0] === '0') {
    base = 8;
  }
  const d = BASE_DIGITS[base]!;
  const shape = prefixed ? new RegExp(`^(_?${d})+$`) : new RegExp(`^${d}(_?${d})*$`);
  if (!shape.test(digits)) throw new Error('must be an integer');
  const clean = digits.replace(/_/g, '');
  const magnitude = base === 10 ? BigInt(clean) : BigInt(`${BASE_PREFIX[base]}${clean}`);
  return negative ? -magnitude : magnitude;
}

function parseInteger(type: ScalarType, raw: string, dialect: QueryDialect): bigint {
  if (dialect === 'v1') return parseGoInteger(raw, isUnsigned(type));
  if (!/^-?\d+$/.test(raw)) throw new Error('must be an integer');
  return BigInt(raw);
}

const GO_STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const GO_URL_BASE64 = /^(?:[A-Za-z0-9\-_]{4})*(?:[A-Za-z0-9\-_]{2}==|[A-Za-z0-9\-_]{3}=)?$/;

export function parseScalar(type: ScalarType, raw: string, dialect: QueryDialect): unknown {
  switch (type) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL: {
      const v = BOOL_VALUES[raw];
      if (v === undefined) throw new Error('must be true or false');
      return v;
    }
    case ScalarType.BYTES: {
      if (dialect === 'v1') {
        // grpc-gateway v1 runtime.Bytes: Go's padded standard base64, else padded URL-safe base64.
        const b64 = raw.replace(/[\r\n]/g, '');
        if (!GO_STD_BASE64.test(b64) && !GO_URL_BASE64.test(b64)) throw new Error('must be base64');
        return new Uint8Array(Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
      }
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
      const n = parseInteger(type, raw, dialect);
      const [min, max] = INT_RANGES[type]!;
      if (n < min || n > max) throw new Error(`must be between ${min} and ${max}`);
      return is64Bit(type) ? n : Number(n);
    }
  }
}

/**
 * An enum by name or number. grpc-gateway v1 reads the number of a path variable with its Int32
 * (base 0) but that of a query parameter with strconv.Atoi (decimal).
 */
function enumNumber(raw: string, dialect: QueryDialect, source: 'path' | 'query'): number | undefined {
  if (dialect === 'v1' && source === 'query') return /^[+-]?\d+$/.test(raw) ? Number(raw) : undefined;
  try {
    return Number(parseInteger(ScalarType.INT32, raw, dialect));
  } catch {
    return undefined;
  }
}

function parseLeaf(field: DescField, raw: string, dialect: QueryDialect, source: 'path' | 'query'): unknown {
  const kind = field.fieldKind === 'list' ? field.listKind : field.fieldKind;
  if (kind === 'enum') {
    const e = field.enum!;
    const byName = e.values.find((v) => v.name === raw);
    if (byName) return byName.number;
    const n = enumNumber(raw, dialect, source);
    if (n !== undefined && e.values.some((v) => v.number === n)) return n;
    throw new Error(`must be one of ${e.values.map((v) => v.name).join(', ')}`);
  }
  return parseScalar(field.scalar!, raw, dialect);
}

/** What Go's url.ParseQuery refuses, so grpc-gateway v1 answers 400. */
function goQueryError(query: string): string | undefined {
  if (query.includes(';')) return 'invalid semicolon separator in query';
  const bad = /%(?![0-9A-Fa-f]{2}).{0,2}/.exec(query);
  return bad ? `invalid URL escape "${bad[0]}"` : undefined;
}

function setPath(init: Init, path: DescField[], value: unknown): void {
  let target = init;
  for (const field of path.slice(0, -1)) {
    target[field.localName] ??= {};
    target = target[field.localName] as Init;
  }
  target[path[path.length - 1]!.localName] = value;
}

/**
 * Path variables are already decoded; `query` is the raw query string (without "?"). A field
 * bound by the path cannot be overridden by the query.
 */
export function buildRequest<D extends DescMessage>(desc: D, pathVars: Record<string, string>, query: string, dialect: QueryDialect): MessageShape<D> {
  const init: Init = {};
  const errors: FieldError[] = [];
  const refused = dialect === 'v1' ? goQueryError(query) : undefined;
  if (refused) throw new RequestParseError([{ pointer: '/query', message: refused }]);
  const bound = new Set<string>();
  for (const [name, raw] of Object.entries(pathVars)) {
    const path = resolvePath(desc, name)!;
    bound.add(path.map((f) => f.name).join('.'));
    try {
      setPath(init, path, parseLeaf(path[path.length - 1]!, raw, dialect, 'path'));
    } catch (err) {
      errors.push({ pointer: `/params/${name}`, message: (err as Error).message });
    }
  }
  const params = new URLSearchParams(query);
  const seen = new Map<string, { path: DescField[]; values: string[] }>();
  for (const [name, raw] of params) {
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
      if (leaf.fieldKind === 'list') setPath(init, path, values.map((v) => parseLeaf(leaf, v, dialect, 'query')));
      else if (values.length > 1 && dialect === 'v2') throw new Error('is given more than once');
      else setPath(init, path, parseLeaf(leaf, values[0]!, dialect, 'query'));
    } catch (err) {
      errors.push({ pointer: `/query/${key}`, message: (err as Error).message });
    }
  }
  if (errors.length) throw new RequestParseError(errors);
  return create(desc, init as never);
}
