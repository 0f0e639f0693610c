// The bundled contract (generated/openapi.json) and the request validator built from it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as OpenApiValidator from 'express-openapi-validator';
import type { RequestHandler } from 'express';
import type { ApiKeyService } from './keys/service.ts';
import { bearerSecurityHandler } from './http/auth.ts';

export const OPENAPI_PATH = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

export function loadOpenApiDocument(): Record<string, any> {
  return JSON.parse(readFileSync(OPENAPI_PATH, 'utf8'));
}

/** Validates every request the document describes; routes it does not describe pass through. */
export function openApiRequestValidator(keys: ApiKeyService): RequestHandler[] {
  return OpenApiValidator.middleware({
    apiSpec: loadOpenApiDocument() as any,
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
    validateResponses: false,
    validateSecurity: { handlers: { bearerAuth: bearerSecurityHandler(keys) as any } },
    ignoreUndocumented: true,
    validateFormats: true,
  }) as unknown as RequestHandler[];
}
