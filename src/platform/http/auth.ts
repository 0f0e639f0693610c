// Bearer API-key authentication. Operations in the OpenAPI document declare
// `security: [{ bearerAuth: [<scopes>] }]`; the pipeline (operations.ts) authenticates them
// before the body is parsed or validated, so a caller without a key gets 401 (not 400) and one
// without the scope 403. Routes outside the document (area C) use `requireApiKey`.
import type { Request, RequestHandler } from 'express';
import type { ApiKeyService, Principal, Scope } from '../keys/service.ts';
import { insufficientScope, unauthorized } from './errors.ts';

const principals = new WeakMap<Request, Principal>();

function bearerToken(req: Request): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m?.[1];
}

/** Resolves and remembers the caller; throws 401 or 403 AppErrors. */
export async function authorizeRequest(keys: ApiKeyService, req: Request, scopes: readonly string[]): Promise<Principal> {
  const token = bearerToken(req);
  if (!token) throw unauthorized();
  const principal = await keys.authenticate(token);
  if (!principal) throw unauthorized('The API key is unknown or revoked.');
  assertScopes(principal, scopes);
  principals.set(req, principal);
  return principal;
}

/** Throws the 403 with the insufficient_scope challenge when the principal lacks any of `scopes`. */
export function assertScopes(principal: Principal, scopes: readonly string[]): void {
  const missing = scopes.filter((s) => !principal.scopes.includes(s as Scope));
  if (missing.length) throw insufficientScope(missing);
}

/** Middleware form, for routes the OpenAPI document does not describe. A key that could not be looked up (the database failed) is a 503 or 500, never a 401. */
export function requireApiKey(keys: ApiKeyService, ...scopes: Scope[]): RequestHandler {
  return async (req, _res, next) => {
    await authorizeRequest(keys, req, scopes);
    next();
  };
}

/** The id (never the secret) of the key this request was authenticated with, if it was. */
export function authenticatedKeyId(req: Request): string | undefined {
  return principals.get(req)?.keyId;
}

/** The authenticated principal, if the request was authenticated. */
export function principalIfAny(req: Request): Principal | undefined {
  return principals.get(req);
}

/** The authenticated principal; only valid behind authenticateOperation or requireApiKey. */
export function principalOf(req: Request): Principal {
  const p = principals.get(req);
  if (!p) throw unauthorized();
  return p;
}
