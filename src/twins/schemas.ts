// Request bodies checked against the same OpenAPI schemas the HTTP validator uses, so callers
// inside the process (the USSD area submits claims directly) get the same 400s as HTTP clients.
import { contractValidator } from '../platform/contract-validators.ts';
import { didSyntaxError } from '../platform/did.ts';
import { invalidInput, type InputIssue, type InputPath } from '../platform/domain-errors.ts';
import { schemaIssues } from '../platform/schema-issues.ts';

/** Asserts body matches components.schemas[schemaName]; an invalid-input error listing every failing member otherwise. */
export function assertMatchesSchema<T>(schemaName: string, body: unknown, what: string): asserts body is T {
  const validate = contractValidator(schemaName);
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
