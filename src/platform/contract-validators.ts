// Validators for the contract's schemas, for checks made inside the process (area A's bodies
// when area B submits directly, plugin manifests at boot): one Ajv over the bundled contract,
// each schema compiled once, so they agree with the HTTP validator and with each other.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { bundledContract } from './contract.ts';

// verbose: a failed pattern's schema carries its wording (x-hearth-message, schema-issues.ts).
const ajv = new Ajv2020({ strict: false, allErrors: true, verbose: true });
(addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(bundledContract(), 'openapi.json');

const compiled = new Map<string, ValidateFunction>();

/** The validator of components.schemas[schemaName]. */
export function contractValidator<T = unknown>(schemaName: string): ValidateFunction<T> {
  let v = compiled.get(schemaName);
  if (!v) {
    v = ajv.compile({ $ref: `openapi.json#/components/schemas/${schemaName}` });
    compiled.set(schemaName, v);
  }
  return v as ValidateFunction<T>;
}
