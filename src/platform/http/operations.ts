// The first steps of the one request pipeline, for every area the OpenAPI document describes:
//   1. resolve the request to an operation of the contract (method and path template);
//   2. authenticate it and check its scopes as that operation's `security` demands;
// then (app.ts) parse the body, validate the request against the operation, run the handler.
// The operation resolved here is the only match: the validator run is the one built for it
// (openapi.ts), and contractOnly only confirms that the validator read the same path.
import type { Request, RequestHandler } from 'express';
import type { OpenApiDocument, OpenApiOperation, OpenApiParameter } from '../contract.ts';
import type { InputPath } from '../domain-errors.ts';
import { jsonPointer } from '../json-pointer.ts';
import type { ApiKeyService } from '../keys/service.ts';
import { authorizeRequest } from './auth.ts';

export interface ResolvedOperation {
  /** The contract's operationId, e.g. getClaim: what validates the request and which handler runs. */
  operationId: string;
  /** The document's path template, e.g. /v1/claims/{id}. */
  template: string;
  /** Scopes of the bearerAuth requirement; null for a public operation. */
  scopes: readonly string[] | null;
  /** The request pointer of each parameter by name: `cursor` -> /query/cursor, `Idempotency-Key` -> /headers/idempotency-key. */
  parameters: ReadonlyMap<string, string>;
}

const PARAMETER_PARTS: Record<string, string> = { query: 'query', header: 'headers', path: 'params', cookie: 'cookies' };

/** Each parameter of an operation (its own and its path's) by name, as a pointer into the request. */
function parameterPointers(doc: OpenApiDocument, ...lists: (OpenApiParameter[] | undefined)[]): Map<string, string> {
  const pointers = new Map<string, string>();
  for (const p of lists.flatMap((l) => l ?? [])) {
    const param = p.$ref ? doc.components?.parameters?.[p.$ref.replace('#/components/parameters/', '')] : p;
    if (!param?.name || !param.in) continue;
    pointers.set(param.name, `/${PARAMETER_PARTS[param.in] ?? param.in}${jsonPointer(param.in === 'header' ? param.name.toLowerCase() : param.name)}`);
  }
  return pointers;
}

/**
 * Where in the request an issue of a use case's input lies: a path starting with one of the
 * operation's parameter names is under that parameter; any other is under the body. (A
 * request no operation resolved has only a body to point into.)
 */
export function requestPointer(op: ResolvedOperation | undefined, path: InputPath): string {
  const [first, ...rest] = path;
  const parameter = typeof first === 'string' ? op?.parameters.get(first) : undefined;
  return parameter ? `${parameter}${jsonPointer(...rest)}` : `/body${jsonPointer(...path)}`;
}

interface Candidate extends ResolvedOperation {
  pattern: RegExp;
}

const operations = new WeakMap<Request, ResolvedOperation>();

/** The paths a contract path template matches: `{var}` one segment, one trailing slash allowed, as Express routes do. */
export function templatePattern(template: string): RegExp {
  return new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
}

export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'patch', 'trace'];

/** An operation's operationId; `GET /x` for one without (the contract gives each one). */
export function operationIdOf(method: string, template: string, op: OpenApiOperation): string {
  return op.operationId ?? `${method.toUpperCase()} ${template}`;
}

/** The scopes an operation's security requirements ask for, or null when any caller may call it. */
export function scopesOf(security: Record<string, string[]>[], where: string): readonly string[] | null {
  if (!security.length || security.some((r) => Object.keys(r).length === 0)) return null;
  if (security.length !== 1 || Object.keys(security[0]!).join() !== 'bearerAuth') {
    throw new Error(`${where}: only "security: []" or one bearerAuth requirement is supported`);
  }
  return security[0]!.bearerAuth!;
}

/** Resolves each request to its operation (HEAD as the GET it runs); other requests pass unresolved. */
export function operationResolver(doc: OpenApiDocument): RequestHandler {
  const byMethod = new Map<string, Candidate[]>();
  for (const [template, item] of Object.entries(doc.paths ?? {})) {
    const pattern = templatePattern(template);
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const scopes = scopesOf(op.security ?? doc.security ?? [], `${method.toUpperCase()} ${template}`);
      const list = byMethod.get(method.toUpperCase()) ?? [];
      list.push({ operationId: operationIdOf(method, template, op), template, scopes, pattern, parameters: parameterPointers(doc, item.parameters, op.parameters) });
      byMethod.set(method.toUpperCase(), list);
    }
  }
  // Literal templates first, so /v1/collections/{id}/report.svg never loses to a template variable.
  for (const list of byMethod.values()) list.sort((a, b) => Number(a.template.includes('{')) - Number(b.template.includes('{')));
  return (req, _res, next) => {
    const candidates = byMethod.get(req.method === 'HEAD' ? 'GET' : req.method);
    const path = req.path;
    const match = candidates?.find((c) => c.pattern.test(path));
    if (match) operations.set(req, match);
    next();
  };
}

export function operationOf(req: Request): ResolvedOperation | undefined {
  return operations.get(req);
}

/** Authenticates a resolved operation that asks for a key: 401/403 (or 503 if keys cannot be read). */
export function authenticateOperation(keys: ApiKeyService): RequestHandler {
  return async (req, _res, next) => {
    const scopes = operations.get(req)?.scopes;
    if (scopes) await authorizeRequest(keys, req, scopes);
    next();
  };
}
