// The gogoproto options kept in the protos, as the Go types a node generates from them follow
// them: the gateway's JSON (gateway/render.ts) and the node's gRPC answers (node/server.ts).
import { create, getOption, hasOption, type DescField, type DescMessage, type Message } from '@bufbuild/protobuf';
import { customtype, nullable } from '../../generated/proto/gogoproto/gogo_pb.ts';

/**
 * The gogoproto options of a field, read once: getOption decodes the field's options on every
 * call, which on a list of claims was most of the render's cost (measured with make bench).
 */
const gogoOptions = new WeakMap<DescField, { nonNullable: boolean; customtype: string }>();
export function gogoOptionsOf(field: DescField): { nonNullable: boolean; customtype: string } {
  let options = gogoOptions.get(field);
  if (!options) {
    options = { nonNullable: hasOption(field, nullable) && !getOption(field, nullable), customtype: getOption(field, customtype) };
    gogoOptions.set(field, options);
  }
  return options;
}

/**
 * Sets every unset `nullable = false` message field of `message` (and of the messages it holds)
 * to its zero value, as a gogo-generated Go struct always carries and marshals it: on the wire a
 * node sends such a field even when empty (min_deposit_period as an empty Duration), so a client
 * reading with defaults gets a value, not null.
 */
export function fillNonNullable(desc: DescMessage, message: Message): void {
  const msg = message as unknown as Record<string, unknown>;
  for (const field of desc.fields) {
    if (field.oneof || field.fieldKind !== 'message' && field.fieldKind !== 'list') continue;
    if (field.fieldKind === 'list') {
      if (field.listKind === 'message') for (const item of (msg[field.localName] as Message[] | undefined) ?? []) fillNonNullable(field.message, item);
      continue;
    }
    const value = msg[field.localName] as Message | undefined;
    if (value !== undefined) fillNonNullable(field.message, value);
    else if (gogoOptionsOf(field).nonNullable) msg[field.localName] = filled(field.message);
  }
}

function filled(desc: DescMessage): Message {
  const zero = create(desc);
  fillNonNullable(desc, zero);
  return zero;
}
