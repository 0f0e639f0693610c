// Writes generated/chain-openapi.json: area C's routes as an OpenAPI 3.1 document, as Cosmos
// nodes publish their gateway's swagger. It is read from the same descriptors the gateway builds
// its route table from (annotatedRoutes: every google.api.http binding of every compiled-in
// method), and its schemas say what gateway/render.ts writes: proto field names, every field
// present, 64-bit integers as strings, enums by name, bytes as base64, null for an unset message
// unless gogoproto makes it a value. Paths are under the annotations' prefix, /chain, which is
// also the gateway's default mount; src/chain/openapi.ts moves them to an instance's own.
import { writeFileSync } from 'node:fs';
import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { ANNOTATION_PREFIX, annotatedRoutes, type Route } from '../src/chain/gateway/routes.ts';
import { gogoOptionsOf } from '../src/chain/gogo-options.ts';
import { methodFullName, QUERY_SERVICES } from '../src/chain/services.ts';

type Schema = Record<string, unknown>;

const schemas = new Map<string, Schema>();
const pending: DescMessage[] = [];

const ref = (desc: DescMessage): Schema => {
  if (!schemas.has(desc.typeName) && !pending.includes(desc)) pending.push(desc);
  return { $ref: `#/components/schemas/${desc.typeName}` };
};

const INT64 = { type: 'string', format: 'int64', pattern: '^-?[0-9]+$' };
const UINT64 = { type: 'string', format: 'uint64', pattern: '^[0-9]+$' };

/** A scalar as renderScalar writes it. */
function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.INT64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return { ...INT64 };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { ...UINT64 };
    case ScalarType.INT32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
      return { type: 'integer', format: 'int32' };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: 'integer', format: 'uint32', minimum: 0, maximum: 4294967295 };
    case ScalarType.BOOL:
      return { type: 'boolean' };
    case ScalarType.STRING:
      return { type: 'string' };
    case ScalarType.BYTES:
      return { type: ['string', 'null'], format: 'byte', description: 'Base64; null when empty.' };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { anyOf: [{ type: 'number' }, { type: 'string', enum: ['NaN', 'Infinity', '-Infinity'] }] };
  }
}

const enumSchema = (field: DescField): Schema => ({ type: 'string', enum: field.enum!.values.map((v) => v.name) });

/** A message value (never null): Timestamp and Duration as their strings, any other by reference. */
function messageSchema(desc: DescMessage): Schema {
  if (desc.typeName === 'google.protobuf.Timestamp') return { type: 'string', format: 'date-time' };
  if (desc.typeName === 'google.protobuf.Duration') return { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?s$', description: 'Seconds with an "s", such as "3600s".' };
  return ref(desc);
}

/** A `customtype` string as renderCustomType writes it. */
function customTypeSchema(field: DescField): Schema | undefined {
  const type = gogoOptionsOf(field).customtype;
  if (!type || field.scalar !== ScalarType.STRING) return undefined;
  if (/\.(LegacyDec|Dec)$/.test(type)) return { type: 'string', pattern: '^-?[0-9]+\\.[0-9]{18}$', description: `${type}: a decimal with 18 places, such as "0.100000000000000000".` };
  if (/\.(Int|Uint)$/.test(type)) return { type: 'string', pattern: type.endsWith('Uint') ? '^[0-9]+$' : '^-?[0-9]+$', description: `${type}: an integer of any size.` };
  return undefined;
}

function fieldSchema(field: DescField): Schema {
  switch (field.fieldKind) {
    case 'scalar':
      return customTypeSchema(field) ?? scalarSchema(field.scalar);
    case 'enum':
      return enumSchema(field);
    case 'list':
      return { type: 'array', items: field.listKind === 'scalar' ? scalarSchema(field.scalar) : field.listKind === 'enum' ? enumSchema(field) : messageSchema(field.message) };
    case 'map':
      return { type: 'object', additionalProperties: field.mapKind === 'scalar' ? scalarSchema(field.scalar) : field.mapKind === 'enum' ? enumSchema(field) : messageSchema(field.message) };
    case 'message': {
      const value = messageSchema(field.message);
      // A oneof member appears only when set; a gogoproto `nullable = false` field is a value.
      if (field.oneof || gogoOptionsOf(field).nonNullable) return value;
      return '$ref' in value ? { anyOf: [value, { type: 'null' }] } : { ...value, type: [value.type, 'null'] };
    }
  }
}

function objectSchema(desc: DescMessage): Schema {
  const properties: Record<string, Schema> = {};
  for (const field of desc.fields) {
    const schema = fieldSchema(field);
    if (field.oneof) schema.description = `One of ${field.oneof.name}: present only when it is the one set.`;
    properties[field.name] = schema;
  }
  // Every field is written, empty or not, but oneof members: only the one set.
  const required = desc.fields.filter((f) => !f.oneof).map((f) => f.name);
  return { type: 'object', ...(required.length ? { required } : {}), properties };
}

/** A path or query parameter's value, as the gateway parses it from a string. */
function parameterSchema(field: DescField): Schema {
  const kind = field.fieldKind === 'list' ? field.listKind : field.fieldKind;
  const leaf: Schema =
    kind === 'enum'
      ? { ...enumSchema(field), description: 'The value by name (its number is accepted too).' }
      : field.scalar === ScalarType.BYTES
        ? { type: 'string', format: 'byte', description: 'Base64, URL-encoded.' }
        : scalarSchema(field.scalar!);
  return field.fieldKind === 'list' ? { type: 'array', items: leaf } : leaf;
}

/**
 * The query parameters of a request message: every scalar or enum leaf (or list of them) not
 * bound by the path, named by its proto names dotted by nesting, as the gateway resolves them.
 */
function queryParameters(desc: DescMessage, bound: ReadonlySet<string>, prefix = '', outer: readonly string[] = []): Schema[] {
  const out: Schema[] = [];
  const path = [...outer, desc.typeName];
  for (const field of desc.fields) {
    const name = prefix + field.name;
    if (bound.has(name) || field.fieldKind === 'map' || (field.fieldKind === 'list' && field.listKind === 'message')) continue;
    if (field.fieldKind === 'message') {
      // A message that holds itself would be listed without end: each type is expanded once along a path.
      if (!path.includes(field.message.typeName)) out.push(...queryParameters(field.message, bound, `${name}.`, path));
      continue;
    }
    const alias = prefix + field.jsonName;
    out.push({
      name,
      in: 'query',
      required: false,
      ...(alias !== name ? { description: `Also read as ${alias}.` } : {}),
      schema: parameterSchema(field),
    });
  }
  return out;
}

const errorResponse = (name: string) => ({ $ref: `#/components/responses/${name}` });
/** Every answer the gateway counts under CHAIN_RATE_LIMIT_PER_MINUTE carries these. */
const RATE_LIMIT_HEADERS = { RateLimit: { $ref: '#/components/headers/RateLimit' }, 'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' } };

/** `binding`: 0 for the method's own path, n for its nth additional binding. */
function operation(route: Route, binding: number, primary: Route): Schema {
  const method = route.method;
  const variables = route.segments.flatMap((s) => ('variable' in s ? [s.variable] : []));
  const pathParameters = variables.map((name) => {
    const field = method.input.fields.find((f) => f.name === name)!;
    return { name, in: 'path', required: true, schema: parameterSchema(field) };
  });
  const full = methodFullName(method);
  const responses: Record<string, unknown> = {
    '200': { description: `${method.output.typeName}, rendered as the gateway writes it.`, headers: RATE_LIMIT_HEADERS, content: { 'application/json': { schema: ref(method.output) } } },
    '400': errorResponse('BadRequest'),
    '401': errorResponse('Unauthorized'),
    '403': errorResponse('Forbidden'),
  };
  // Only a lookup by key finds nothing: the node answers NOT_FOUND.
  if (variables.length) responses['404'] = errorResponse('NotFound');
  Object.assign(responses, { '429': errorResponse('TooManyRequests'), '501': errorResponse('NotImplemented'), '503': errorResponse('ServiceUnavailable'), '504': errorResponse('GatewayTimeout'), default: errorResponse('Error') });
  return {
    tags: [method.parent.typeName],
    operationId: binding ? `${full}_${binding + 1}` : full,
    summary: binding ? `${method.name} (at ${route.template})` : method.name,
    description: binding
      ? `The gRPC method \`${full}\`, also bound here (an additional binding): the same answer as ${primary.verb} ${primary.template}.`
      : `The gRPC method \`${full}\`.`,
    parameters: [...pathParameters, ...queryParameters(method.input, new Set(variables))],
    responses,
  };
}

const ERROR_BODY = {
  type: 'object',
  description:
    'google.rpc.Status as the gateway writes it: the gRPC status code, its message, and the details, each an Any with its type URL (no details only when the gateway cannot marshal them: code 13, status 500).',
  required: ['code', 'message'],
  properties: {
    code: { type: 'integer', minimum: 1, maximum: 16, description: 'The gRPC status code (5 NOT_FOUND, 3 INVALID_ARGUMENT, ...).' },
    message: { type: 'string' },
    details: {
      type: 'array',
      items: { type: 'object', required: ['@type'], properties: { '@type': { type: 'string', examples: ['type.googleapis.com/google.rpc.ErrorInfo'] } }, additionalProperties: true },
    },
  },
};

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/google.rpc.Status' } } };
const RESPONSES: Record<string, { description: string; headers?: Schema }> = {
  BadRequest: { description: 'A path or query parameter does not parse (gRPC code 3, INVALID_ARGUMENT), or the node refused the request as invalid.' },
  Unauthorized: { description: 'Only on a gated deployment (CHAIN_GATEWAY_AUTH=apikey): no API key, or an unknown one (code 16, UNAUTHENTICATED).' },
  Forbidden: { description: 'Only on a gated deployment (CHAIN_GATEWAY_AUTH=apikey): the key lacks the scope chain:read (code 7, PERMISSION_DENIED).' },
  NotFound: { description: 'Nothing has this key (code 5, NOT_FOUND).' },
  TooManyRequests: {
    description: 'More requests from this client address in the last minute than CHAIN_RATE_LIMIT_PER_MINUTE (code 8, RESOURCE_EXHAUSTED); retry after Retry-After seconds.',
    headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds until the oldest counted request leaves the window, freeing a place.' } },
  },
  NotImplemented: { description: 'The method is disabled on this gateway (CHAIN_DISABLED_METHODS), or the node does not implement it (code 12, UNIMPLEMENTED).' },
  ServiceUnavailable: {
    description: 'The node cannot be reached, or Hearth itself is out of service (code 14, UNAVAILABLE); retry after Retry-After seconds.',
    headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait before retrying.' } },
  },
  GatewayTimeout: { description: 'The node did not answer within CHAIN_GRPC_TIMEOUT_MS (code 4, DEADLINE_EXCEEDED).' },
  Error: { description: "Any other gRPC status, at the HTTP status grpc-gateway's table gives it." },
};

const DESCRIPTION = `Area C of Hearth: the HTTP/JSON gateway over the IXO chain's gRPC query services. Every route is a \
google.api.http annotation in proto/, and this document is generated from them (scripts/generate-chain-openapi.ts).

- Paths are shown under this instance's gateway prefix (CHAIN_BASE_PATH + CHAIN_PREFIX, by default /chain); a \
deployment may answer under aliases too (CHAIN_PREFIX_ALIASES).
- Answers are Cosmos JSON: keys are the proto field names, every field is present, 64-bit integers and \
cosmos-sdk decimals are strings, enums are names, timestamps RFC 3339 UTC, durations seconds with an s \
(\`"3600s"\`), bytes base64, and an unset message is null.
- Query parameters set request fields by their proto name or lowerCamel JSON name (pagination.count_total or \
pagination.countTotal); unknown ones are ignored, one that does not parse is a 400.
- Errors are \`{"code", "message", "details"}\`, code being the gRPC status code.
- Requests are rate limited per client address (CHAIN_RATE_LIMIT_PER_MINUTE, a sliding window of a minute): \
answers carry RateLimit and RateLimit-Policy, and one over the limit is 429 with Retry-After (code 8, RESOURCE_EXHAUSTED).`;

const routes = annotatedRoutes();
const paths: Record<string, Record<string, Schema>> = {};
for (const route of routes) {
  const bindings = routes.filter((r) => r.method === route.method);
  const path = ANNOTATION_PREFIX + route.segments.map((s) => `/${'literal' in s ? s.literal : `{${s.variable}}`}`).join('');
  (paths[path] ??= {})[route.verb.toLowerCase()] = operation(route, bindings.indexOf(route), bindings[0]!);
}
while (pending.length) {
  const desc = pending.shift()!;
  schemas.set(desc.typeName, objectSchema(desc));
}
schemas.set('google.rpc.Status', ERROR_BODY);

const document = {
  openapi: '3.1.0',
  info: { title: 'Hearth chain gateway (area C)', version: '0.1.0', description: DESCRIPTION, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
  servers: [{ url: 'http://localhost:3000', description: 'Local development server' }],
  // Open by default; a gated deployment wants a key with scope chain:read.
  security: [{}, { bearerAuth: ['chain:read'] }],
  tags: QUERY_SERVICES.map((s) => ({ name: s.typeName, description: `gRPC service ${s.typeName} (proto/${s.file.name}.proto).` })),
  paths,
  components: {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'Only on a gated deployment (CHAIN_GATEWAY_AUTH=apikey): an API key with scope chain:read.' },
    },
    schemas: Object.fromEntries([...schemas].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    responses: Object.fromEntries(Object.entries(RESPONSES).map(([name, r]) => [name, { ...r, headers: { ...RATE_LIMIT_HEADERS, ...r.headers }, content: errorContent }])),
    headers: {
      RateLimit: {
        description: 'The client address\'s remaining budget in the current sliding window of a minute (IETF draft ratelimit-headers-08): the policy\'s name, the requests left and the seconds until a place frees up, e.g. `"1200-in-1min"; r=1197; t=41`.',
        schema: { type: 'string' },
      },
      'RateLimit-Policy': {
        description: 'The limit and its window in seconds (IETF draft ratelimit-headers-08), e.g. `"1200-in-1min"; q=1200; w=60; pk=:...:`, the partition key a hash of the client address.',
        schema: { type: 'string' },
      },
    },
  },
};

writeFileSync('generated/chain-openapi.json', JSON.stringify(document, null, 2) + '\n');
