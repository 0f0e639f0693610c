// Area C's OpenAPI document (generated/chain-openapi.json, which scripts/generate-chain-openapi.ts
// writes from the proto annotations), as an instance serves it: with its paths under the
// gateway's own mount, which a deployment may move from the annotations' /chain
// (CHAIN_BASE_PATH, CHAIN_PREFIX).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { OpenApiDocument } from '../platform/contract.ts';
import { ANNOTATION_PREFIX } from './gateway/routes.ts';

const CHAIN_OPENAPI_PATH = fileURLToPath(new URL('../../generated/chain-openapi.json', import.meta.url));

/** A fresh parse of the generated document, paths under /chain. */
export function loadChainOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(CHAIN_OPENAPI_PATH, 'utf8')) as OpenApiDocument;
}

/** The document with its paths under `mount` (the gateway's first, gatewayMounts(config)[0]). */
export function chainOpenApiDocument(mount: string): OpenApiDocument {
  const doc = loadChainOpenApiDocument();
  doc.paths = Object.fromEntries(Object.entries(doc.paths ?? {}).map(([path, item]) => [mount + path.slice(ANNOTATION_PREFIX.length), item]));
  return doc;
}
