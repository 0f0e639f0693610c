// Request bodies checked against the same OpenAPI schemas the HTTP validator uses, so callers
// inside the process (the USSD area submits claims directly) get the same 400s as HTTP clients.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { loadOpenApiDocument } from '../platform/contract.ts';
import { badRequest, type FieldError } from '../platform/http/errors.ts';
import { didPatternFailure, didSyntaxError } from '../platform/did.ts';
import { jsonPointer, valueAtPointer } from '../platform/http/input.ts';

const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(loadOpenApiDocument(), 'openapi.json');

const compiled = new Map<string, ValidateFunction>();

function validatorFor(schemaName: string): ValidateFunction {
  let v = compiled.get(schemaName);
  if (!v) {
    v = ajv.compile({ $ref: `openapi.json#/components/schemas/${schemaName}` });
    compiled.set(schemaName, v);
  }
  return v;
}

function toFieldError(e: ErrorObject, body: unknown): FieldError {
  // instancePath is already a JSON pointer; the member a keyword names is a token to escape.
  let pointer = `/body${e.instancePath}`;
  const did = didPatternFailure({ keyword: e.keyword, pattern: (e.params as { pattern?: string }).pattern }, valueAtPointer(body, e.instancePath));
  if (did) return { pointer, ...did };
  if (e.keyword === 'required') pointer += jsonPointer((e.params as { missingProperty: string }).missingProperty);
  if (e.keyword === 'additionalProperties') pointer += jsonPointer((e.params as { additionalProperty: string }).additionalProperty);
  const message = e.keyword === 'additionalProperties' ? 'is not a known field' : e.keyword === 'required' ? 'is required' : e.message ?? 'is invalid';
  return { pointer, message, rule: e.keyword };
}

/** Asserts body matches components.schemas[schemaName]; 400 listing every failing field otherwise. */
export function assertMatchesSchema<T>(schemaName: string, body: unknown, what: string): asserts body is T {
  const validate = validatorFor(schemaName);
  if (validate(body)) return;
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== 'if').map((e) => toFieldError(e, body));
  throw badRequest(`The body is not a valid ${what}: ${errors.map((x) => `${x.pointer} ${x.message}`).join('; ')}`, errors);
}

/** FieldErrors for every value that is not a DID (DID URLs included). */
export function didErrors(fields: [pointer: string, value: string | undefined][]): FieldError[] {
  const out: FieldError[] = [];
  for (const [pointer, value] of fields) {
    if (value === undefined) continue;
    const err = didSyntaxError(value);
    if (err) out.push({ pointer, message: err, rule: 'did-syntax' });
  }
  return out;
}

export function assertNoFieldErrors(errors: FieldError[], detail: string): void {
  if (errors.length) throw badRequest(`${detail}: ${errors.map((x) => `${x.pointer} ${x.message}`).join('; ')}`, errors);
}
