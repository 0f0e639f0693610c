// Request bodies checked against the same OpenAPI schemas the HTTP validator uses, so callers
// inside the process (the USSD area submits claims directly) get the same 400s as HTTP clients.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { loadOpenApiDocument } from '../platform/contract.ts';
import { didSyntaxError } from '../platform/did.ts';
import { invalidInput, type InputIssue, type InputPath } from '../platform/domain-errors.ts';
import { schemaIssues } from '../platform/schema-issues.ts';

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

/** Asserts body matches components.schemas[schemaName]; an invalid-input error listing every failing member otherwise. */
export function assertMatchesSchema<T>(schemaName: string, body: unknown, what: string): asserts body is T {
  const validate = validatorFor(schemaName);
  if (validate(body)) return;
  throw invalidInput(`The body is not a valid ${what}`, schemaIssues(validate.errors, body));
}

/** Issues for every value that is not a DID (DID URLs included). */
export function didIssues(fields: [path: InputPath, value: string | undefined][]): InputIssue[] {
  const out: InputIssue[] = [];
  for (const [path, value] of fields) {
    if (value === undefined) continue;
    const err = didSyntaxError(value);
    if (err) out.push({ path, message: err, rule: 'did-syntax' });
  }
  return out;
}
