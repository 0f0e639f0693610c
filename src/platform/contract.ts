// The bundled contract (generated/openapi.json, built from openapi/ by `make generate`): the one
// place the document is located and read. Leaf module: what it imports imports nothing of ours.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const OPENAPI_PATH = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

export type OpenApiDocument = Record<string, any>;

export function loadOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(OPENAPI_PATH, 'utf8'));
}
