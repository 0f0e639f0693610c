// Cosmos JSON rendering (what grpc-gateway with EmitUnpopulated and OrigName produces and what
// Cosmos clients parse): proto field names, every field present, 64-bit integers as strings,
// enums by name, Timestamp as RFC 3339 UTC, Duration as "<seconds>s", bytes as base64, `null`
// for unset messages and empty bytes. The gogoproto options kept in the protos decide the rest,
// as the Go types they generate do on a node: a `nullable = false` message is a value, never
// null (an unset one renders as its zero value), and a `customtype` string renders as that type.
import { ScalarType, type DescField, type DescMessage, type Message } from '@bufbuild/protobuf';
import { gogoOptionsOf } from '../gogo-options.ts';
import { legacyDecFromWire } from '../legacy-dec.ts';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type AnyMessage = Record<string, unknown>;

export function renderMessage(desc: DescMessage, message: Message | AnyMessage): { [k: string]: Json } {
  const msg = message as AnyMessage;
  const out: { [k: string]: Json } = {};
  for (const field of desc.fields) {
    if (field.oneof) {
      const selected = msg[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      // Only the member that is set appears, as protojson does for oneofs.
      if (selected?.case === field.localName) out[field.name] = renderSingle(field, selected.value);
      continue;
    }
    const value = msg[field.localName];
    switch (field.fieldKind) {
      case 'list':
        out[field.name] = ((value as unknown[] | undefined) ?? []).map((v) => renderListItem(field, v));
        break;
      case 'map': {
        const obj: { [k: string]: Json } = {};
        for (const [k, v] of Object.entries((value as Record<string, unknown> | undefined) ?? {})) obj[k] = renderMapValue(field, v);
        out[field.name] = obj;
        break;
      }
      default:
        out[field.name] = renderSingle(field, value);
    }
  }
  return out;
}

function renderSingle(field: DescField, value: unknown): Json {
  switch (field.fieldKind) {
    case 'scalar':
      return renderCustomType(field, value) ?? renderScalar(field.scalar, value);
    case 'enum':
      return renderEnum(field.enum, value as number | undefined);
    case 'message':
      if (value !== undefined && value !== null) return renderValueMessage(field.message, value as AnyMessage);
      return gogoOptionsOf(field).nonNullable ? renderZeroMessage(field.message) : null;
    default:
      return null;
  }
}

/**
 * The cosmos-sdk math types a `customtype` string holds: LegacyDec travels as the integer scaled
 * by 10^18 and renders with 18 places; Int and Uint render their zero value as "0".
 */
function renderCustomType(field: DescField, value: unknown): Json | undefined {
  const type = gogoOptionsOf(field).customtype;
  if (!type || field.scalar !== ScalarType.STRING) return undefined;
  const text = (value as string | undefined) ?? '';
  if (/\.(LegacyDec|Dec)$/.test(type)) return legacyDecFromWire(text);
  if (/\.(Int|Uint)$/.test(type)) return text === '' ? '0' : text;
  return undefined;
}

/** A Go value type's zero: time.Time{} and time.Duration(0) for stdtime/stdduration, else every field at its default. */
function renderZeroMessage(desc: DescMessage): Json {
  if (desc.typeName === 'google.protobuf.Timestamp') return '0001-01-01T00:00:00Z';
  if (desc.typeName === 'google.protobuf.Duration') return '0s';
  return renderMessage(desc, {});
}

function renderListItem(field: DescField & { fieldKind: 'list' }, v: unknown): Json {
  if (field.listKind === 'scalar') return renderScalar(field.scalar, v);
  if (field.listKind === 'enum') return renderEnum(field.enum, v as number);
  return renderValueMessage(field.message, v as AnyMessage);
}

function renderMapValue(field: DescField & { fieldKind: 'map' }, v: unknown): Json {
  if (field.mapKind === 'scalar') return renderScalar(field.scalar, v);
  if (field.mapKind === 'enum') return renderEnum(field.enum, v as number);
  return renderValueMessage(field.message, v as AnyMessage);
}

function renderValueMessage(desc: DescMessage, msg: AnyMessage): Json {
  if (desc.typeName === 'google.protobuf.Timestamp') return renderTimestamp(msg.seconds as bigint, msg.nanos as number);
  if (desc.typeName === 'google.protobuf.Duration') return renderDuration(msg.seconds as bigint, msg.nanos as number);
  return renderMessage(desc, msg);
}

function renderEnum(desc: { values: readonly { number: number; name: string }[] }, value: number | undefined): Json {
  const n = value ?? 0;
  return desc.values.find((v) => v.number === n)?.name ?? n;
}

function renderScalar(type: ScalarType, value: unknown): Json {
  switch (type) {
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return String((value as bigint | number | string | undefined) ?? 0);
    case ScalarType.BOOL:
      return Boolean(value);
    case ScalarType.STRING:
      return (value as string | undefined) ?? '';
    case ScalarType.BYTES: {
      const bytes = value as Uint8Array | undefined;
      return bytes && bytes.length ? Buffer.from(bytes).toString('base64') : null;
    }
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = (value as number | undefined) ?? 0;
      if (Number.isNaN(n)) return 'NaN';
      if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
      return n;
    }
    default:
      return (value as number | undefined) ?? 0;
  }
}

/** Fraction digits as protojson writes them: none, or 3, 6 or 9. */
function fraction(nanos: number): string {
  if (!nanos) return '';
  const s = String(Math.abs(nanos)).padStart(9, '0');
  if (s.endsWith('000000')) return '.' + s.slice(0, 3);
  if (s.endsWith('000')) return '.' + s.slice(0, 6);
  return '.' + s;
}

export function renderTimestamp(seconds: bigint, nanos: number): string {
  const iso = new Date(Number(seconds) * 1000).toISOString();
  return iso.slice(0, 19) + fraction(nanos) + 'Z';
}

export function renderDuration(seconds: bigint, nanos: number): string {
  const negative = seconds < 0n || nanos < 0;
  const abs = seconds < 0n ? -seconds : seconds;
  return `${negative ? '-' : ''}${abs}${fraction(nanos)}s`;
}
