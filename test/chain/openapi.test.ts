// Area C's OpenAPI document (generated/chain-openapi.json) against the gateway it describes: the
// same routes as the gateway's table, query parameters the gateway reads, response schemas that
// every answer render.ts writes matches (filled and empty), and, served, paths where this
// instance answers.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { create, equals, ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { renderMessage } from '../../src/chain/gateway/render.ts';
import { buildRequest } from '../../src/chain/gateway/request.ts';
import { ANNOTATION_PREFIX, buildRoutes } from '../../src/chain/gateway/routes.ts';
import { loadChainOpenApiDocument } from '../../src/chain/openapi.ts';
import { QUERY_SERVICES } from '../../src/chain/services.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { startTestServer } from '../helpers/server.ts';

type Parameter = { name: string; in: 'path' | 'query'; schema: { type?: string; enum?: string[]; format?: string; items?: { type?: string } } };
type Operation = { operationId: string; parameters: Parameter[]; responses: Record<string, { $ref?: string; content?: Record<string, { schema: { $ref: string } }> }> };

const doc = loadChainOpenApiDocument() as unknown as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([verb, op]) => ({ path, verb, op })));

/** Ajv over the document, every object schema closed, so a key render.ts writes that the schema lacks fails too. */
function validatorOf(document: object) {
  const closed = structuredClone(document);
  const close = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const schema = node as Record<string, unknown>;
    if (schema.type === 'object' && schema.properties && !('additionalProperties' in schema)) schema.additionalProperties = false;
    Object.values(schema).forEach(close);
  };
  close(closed);
  const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
  (addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema(closed, 'chain-openapi.json');
  return (pointer: string, value: unknown) => {
    const validate = ajv.compile({ $ref: `chain-openapi.json${pointer}` });
    return validate(value) ? '' : ajv.errorsText(validate.errors);
  };
}

const SCALAR_SAMPLES: Record<ScalarType, unknown> = {
  [ScalarType.DOUBLE]: 1.5,
  [ScalarType.FLOAT]: 1.5,
  [ScalarType.INT64]: -7n,
  [ScalarType.UINT64]: 7n,
  [ScalarType.INT32]: -7,
  [ScalarType.FIXED64]: 7n,
  [ScalarType.FIXED32]: 7,
  [ScalarType.BOOL]: true,
  // Digits, so a cosmos-sdk decimal or integer customtype holds a value it can render.
  [ScalarType.STRING]: '7',
  [ScalarType.BYTES]: new Uint8Array([1, 2, 3]),
  [ScalarType.UINT32]: 7,
  [ScalarType.SFIXED32]: -7,
  [ScalarType.SFIXED64]: -7n,
  [ScalarType.SINT32]: -7,
  [ScalarType.SINT64]: -7n,
};

/** `desc` with every field set (the first member of each oneof), messages nested to `depth`. */
function filled(desc: DescMessage, depth = 4): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  const value = (field: DescField, kind: string): unknown =>
    kind === 'scalar' ? SCALAR_SAMPLES[field.scalar!] : kind === 'enum' ? field.enum!.values.at(-1)!.number : filled(field.message!, depth - 1);
  for (const field of desc.fields) {
    if (field.fieldKind === 'message' && depth === 0) continue;
    if (field.oneof) {
      if (field.oneof.fields[0] === field) init[field.oneof.localName] = { case: field.localName, value: value(field, field.fieldKind) };
      continue;
    }
    if (field.fieldKind === 'list') init[field.localName] = [value(field, field.listKind)];
    else if (field.fieldKind === 'map') init[field.localName] = { k: value(field, field.mapKind) };
    else init[field.localName] = value(field, field.fieldKind);
  }
  if (desc.typeName === 'google.protobuf.Timestamp') return { seconds: 1_700_000_000n, nanos: 5_000_000 };
  return create(desc, init as never);
}

/** A query value of a parameter's schema that the gateway parses to a non-default value. */
function sampleQueryValue(schema: Parameter['schema']): string {
  const leaf = schema.type === 'array' ? schema.items! : schema;
  if (schema.enum) return schema.enum.at(-1)!;
  if (leaf.type === 'boolean') return 'true';
  if (schema.format === 'byte') return 'AQID';
  return '7';
}

describe('area C OpenAPI document', () => {
  it('lists exactly the routes of the gateway table, under the annotations\' prefix, each with its path variables', () => {
    const fromTable = buildRoutes().map((r) => {
      const path = ANNOTATION_PREFIX + r.segments.map((s) => `/${'literal' in s ? s.literal : `{${s.variable}}`}`).join('');
      return `${r.verb} ${path}`;
    });
    expect(operations.map((o) => `${o.verb.toUpperCase()} ${o.path}`).sort()).to.deep.equal(fromTable.sort());
    expect(operations.length).to.be.at.least(30);
    for (const { path, op } of operations) {
      const variables = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(op.parameters.filter((p) => p.in === 'path').map((p) => p.name), path).to.deep.equal(variables);
    }
    expect(new Set(operations.map((o) => o.op.operationId)).size).to.equal(operations.length);
  });

  it('every query parameter is one the gateway reads: a value of its schema sets a request field, in both gateway styles', () => {
    const methods = new Map(QUERY_SERVICES.flatMap((s) => s.methods.map((m) => [`${s.typeName}.${m.name}`, m])));
    let checked = 0;
    for (const { path, op } of operations) {
      const method = methods.get(op.operationId.replace(/_\d+$/, ''))!;
      for (const p of op.parameters.filter((q) => q.in === 'query')) {
        for (const style of ['v1', 'v2'] as const) {
          const built = buildRequest(method.input, {}, `${p.name}=${encodeURIComponent(sampleQueryValue(p.schema))}`, style);
          expect(equals(method.input, built as never, create(method.input) as never), `${path} ${p.name} (${style})`).to.equal(false);
        }
        checked++;
      }
    }
    expect(checked).to.be.at.least(40);
  });

  it('every answer the gateway renders matches its response schema, filled or empty, and leaves out no field of the schema nor adds one', () => {
    const check = validatorOf(doc);
    let checked = 0;
    for (const service of QUERY_SERVICES) {
      for (const method of service.methods) {
        const op = operations.find((o) => o.op.operationId === `${service.typeName}.${method.name}`)!.op;
        const pointer = op.responses['200']!.content!['application/json']!.schema.$ref;
        for (const [what, message] of [
          ['filled', filled(method.output)],
          ['empty', create(method.output)],
        ] as const) {
          const rendered = renderMessage(method.output, message);
          expect(check(pointer, rendered), `${service.typeName}.${method.name} (${what}): ${JSON.stringify(rendered)}`).to.equal('');
        }
        checked++;
      }
    }
    expect(checked).to.equal(QUERY_SERVICES.reduce((n, s) => n + s.methods.length, 0));
  });

  describe('as served', () => {
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    before(async () => {
      db = await createTestDatabase('sqlite');
    });
    after(async () => db.drop());

    it('answers a route and its errors as the served document says, at the instance\'s own prefix (CHAIN_BASE_PATH + CHAIN_PREFIX)', async function () {
      this.timeout(30_000);
      const server = await startTestServer(db.db, { CHAIN_BASE_PATH: '/rest', CHAIN_PREFIX: '/ixo' });
      try {
        const served = await (await fetch(`${server.baseUrl}/docs/chain-openapi.json`)).json();
        expect(Object.keys(served.paths).every((p) => p.startsWith('/rest/ixo/'))).to.equal(true);
        expect(Object.keys(served.paths)).to.deep.equal(Object.keys(doc.paths).map((p) => `/rest/ixo${p.slice(ANNOTATION_PREFIX.length)}`));
        const check = validatorOf(served);
        const responseSchema = (path: string, status: string) => {
          const response = served.paths[path].get.responses[status];
          return response.$ref ? `${response.$ref}/content/application~1json/schema` : response.content['application/json'].schema.$ref;
        };
        for (const [url, path, status] of [
          ['/rest/ixo/token/params', '/rest/ixo/token/params', '200'],
          ['/rest/ixo/claims/params', '/rest/ixo/claims/params', '200'],
          ['/rest/ixo/entity?pagination.limit=1&pagination.count_total=true', '/rest/ixo/entity', '200'],
          ['/rest/ixo/claims/claims', '/rest/ixo/claims/claims', '200'],
          ['/rest/ixo/entity/did:ixo:entity:nothing', '/rest/ixo/entity/{id}', '404'],
          ['/rest/ixo/claims/claims?pagination.limit=x', '/rest/ixo/claims/claims', '400'],
        ] as const) {
          const res = await fetch(server.baseUrl + url);
          expect(res.status, url).to.equal(Number(status));
          const body = await res.json();
          expect(check(responseSchema(path, status), body), `${url}: ${JSON.stringify(body)}`).to.equal('');
        }
      } finally {
        await server.stop();
      }
    });
  });
});
