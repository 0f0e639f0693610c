// Area C's OpenAPI document, generated/chain-openapi.json, which scripts/generate-chain-openapi.ts
// writes from the proto annotations.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { OpenApiDocument } from '../platform/contract.ts';

const CHAIN_OPENAPI_PATH = fileURLToPath(new URL('../../generated/chain-openapi.json', import.meta.url));

/** A fresh parse of the generated document, paths under /chain. */
export function loadChainOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(CHAIN_OPENAPI_PATH, 'utf8')) as OpenApiDocument;
}
