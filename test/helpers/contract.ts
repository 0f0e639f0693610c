// Validates a response against the OpenAPI document: status documented, content type
// documented, body matching the schema (JSON Schema 2020-12, as OpenAPI 3.1 uses).
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { loadOpenApiDocument } from '../../src/platform/contract.ts';

const doc = loadOpenApiDocument();
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(doc, 'openapi.json');

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Asserts that (status, content type, body) is what the document says `method pathTemplate`
 * answers. pathTemplate is the document's key, e.g. '/v1/claims/{id}'.
 */
export function expectContractResponse(
  method: string,
  pathTemplate: string,
  response: { status: number; headers: { get(name: string): string | null } | Record<string, any>; body: unknown },
): void {
  const op: any = doc.paths?.[pathTemplate]?.[method.toLowerCase()];
  expect(op, `${method} ${pathTemplate} is not in the OpenAPI document`).to.not.be.oneOf([null, undefined]);
  const responses = op.responses ?? {};
  const key = String(response.status) in responses ? String(response.status) : `${String(response.status)[0]}XX` in responses ? `${String(response.status)[0]}XX` : 'default';
  expect(responses, `status ${response.status} is not documented for ${method} ${pathTemplate}`).to.have.property(key);
  const headerGet = (name: string) =>
    typeof (response.headers as any).get === 'function' ? (response.headers as any).get(name) : (response.headers as any)[name];
  const contentType = String(headerGet('content-type') ?? '').split(';')[0]!.trim();
  const resolved = responses[key].$ref ? resolveRef(responses[key].$ref) : responses[key];
  const content = resolved.content ?? {};
  if (!Object.keys(content).length) return;
  expect(Object.keys(content), `content type ${contentType} for ${response.status}`).to.include(contentType);
  const pointer = resolved === responses[key]
    ? `openapi.json#/paths/${escape(pathTemplate)}/${method.toLowerCase()}/responses/${key}/content/${escape(contentType)}/schema`
    : `openapi.json${responses[key].$ref}/content/${escape(contentType)}/schema`;
  const validate = ajv.getSchema(pointer) ?? ajv.compile({ $ref: pointer });
  const ok = validate(response.body);
  expect(ok, `response does not match the contract: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(response.body)}`).to.equal(true);
}

function resolveRef(ref: string): any {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((node: any, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}
