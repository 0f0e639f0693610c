// The bundled contract (generated/openapi.json, built from openapi/ by `make generate`): the one
// place the document is located and read. Leaf module: what it imports imports nothing of ours.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const OPENAPI_PATH = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

/** An operation of the contract, as far as Hearth reads it; the validator and Ajv read the rest. */
export interface OpenApiOperation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: OpenApiParameter[];
  [key: string]: unknown;
}

export interface OpenApiParameter {
  name?: string;
  in?: string;
  $ref?: string;
}

/** A schema of the contract, as far as Hearth reads it (patterns, enums, properties). */
export interface OpenApiSchema {
  pattern?: string;
  required?: string[];
  properties?: Record<string, OpenApiSchema>;
  [key: string]: unknown;
}

export interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation> & { parameters?: OpenApiParameter[] }>;
  security?: Record<string, string[]>[];
  components?: { schemas?: Record<string, OpenApiSchema>; parameters?: Record<string, OpenApiParameter> };
  [key: string]: unknown;
}

/** A fresh parse of the bundled contract, the caller's own (the request validator changes its copy). */
export function loadOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as OpenApiDocument;
}

let shared: OpenApiDocument | undefined;

/** The bundled contract parsed once, for code that only reads it (never change it). */
export function bundledContract(): OpenApiDocument {
  return (shared ??= loadOpenApiDocument());
}

/** components.schemas[name] of the bundled contract; a missing one is a broken build, not a request's fault. */
export function contractSchema(doc: OpenApiDocument, name: string): OpenApiSchema {
  const schema = doc.components?.schemas?.[name];
  if (!schema) throw new Error(`The bundled contract has no schema ${name}; run make generate.`);
  return schema;
}
