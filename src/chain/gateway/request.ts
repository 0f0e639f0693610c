// Builds the gRPC request message of a route from path variables and query parameters, the
// way grpc-gateway does: `a.b=c` sets nested field a.b (proto name or lowerCamel JSON name),
// unknown parameters are ignored, a value that does not parse is a 400.
import { create, ScalarType, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { FieldError } from '../../platform/http/errors.ts';

export class RequestParseError extends Error {
  constructor(readonly fieldErrors: FieldError[]) {
    super(fieldErrors.map((e) => `${e.pointer.replace(/^\/(query|params)\//, '')}: ${e.message}`).join('; '));
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

function parseScalar(type: ScalarType, raw: string): unknown {
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
      if (!/^-?\d+$/.test(raw)) throw new Error('must be an integer');
      const n = BigInt(raw);
      const [min, max] = INT_RANGES[type]!;
      if (n < min || n > max) throw new Error(`must be between ${min} and ${max}`);
      const is64 = type === ScalarType.INT64 || type === ScalarType.UINT64 || type === ScalarType.SINT64 || type === ScalarType.FIXED64 || type === ScalarType.SFIXED64;
      return is64 ? n : Number(n);
    }
  }
}

function parseLeaf(field: DescField, raw: string): unknown {
  const kind = field.fieldKind === 'list' ? field.listKind : field.fieldKind;
  if (kind === 'enum') {
    const e = field.enum!;
    const byName = e.values.find((v) => v.name === raw);
    if (byName) return byName.number;
    if (/^-?\d+$/.test(raw) && e.values.some((v) => v.number === Number(raw))) return Number(raw);
    throw new Error(`must be one of ${e.values.map((v) => v.name).join(', ')}`);
  }
  return parseScalar(field.scalar!, raw);
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
export function buildRequest<D extends DescMessage>(desc: D, pathVars: Record<string, string>, query: string): MessageShape<D> {
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
