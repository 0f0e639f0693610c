// The request validator built from the bundled contract, and the handlers that hold requests to it.
import * as OpenApiValidator from 'express-openapi-validator';
import { Router, type Request, type RequestHandler } from 'express';
import { AppError } from './http/errors.ts';
import type { OpenApiDocument, OpenApiParameter } from './contract.ts';
import { didPatternFailure } from './did.ts';
import { valueAtPointer } from './json-pointer.ts';
import { operationOf, templatePattern } from './http/operations.ts';

/** The literal leading segments of a path (at most two, none after a `{template}`): its validator group. */
function groupKeyOf(path: string): string {
  const literal: string[] = [];
  for (const segment of path.split('/').slice(1, 3)) {
    if (segment.includes('{')) break;
    literal.push(segment);
  }
  return literal.join('/');
}

/**
 * Validates every request the document describes; routes it does not describe pass through.
 * Authentication is not its job (operations.ts runs it before the body is parsed).
 * express-openapi-validator matches a request by compiling each documented path's pattern in
 * turn, per request; so there is one validator per group of paths sharing their first two
 * segments (`v1/claims`, `api/ussd`, ...), holding only that group's few paths, and a request
 * outside every group (area C) skips validation without scanning the document at all.
 */
export function openApiRequestValidator(doc: OpenApiDocument): RequestHandler {
  const groups = new Map<string, Record<string, unknown>>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const key = groupKeyOf(path);
    groups.set(key, { ...groups.get(key), [path]: item });
  }
  const validators = new Map<string, Router>();
  for (const [key, paths] of groups) {
    const router = Router();
    router.use(
      OpenApiValidator.middleware({
        apiSpec: { ...doc, paths } as unknown as Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'],
        // Query and path parameters are always coerced by the library; bodies are checked as sent.
        validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
        validateResponses: false,
        validateSecurity: false,
        ignoreUndocumented: true,
        validateFormats: true,
      }) as unknown as RequestHandler[],
    );
    validators.set(key, router);
  }
  return (req, res, next) => {
    // The longest group key that the request's own leading segments spell.
    const [, first = '', second] = req.path.split('/', 3);
    const validator = (second !== undefined && validators.get(`${first}/${second}`)) || validators.get(first);
    if (!validator) return next();
    const done = (err?: unknown) => next(err ? restateRuleFailures(err, req) : integersAsWritten(req, doc));
    // Express answers HEAD with the GET handler, but the document describes no HEAD operations,
    // so the validator would pass HEAD through unvalidated: it is checked as the GET it runs.
    if (req.method === 'HEAD') {
      req.method = 'GET';
      return validator(req, res, (err?: unknown) => {
        req.method = 'HEAD';
        done(err);
      });
    }
    validator(req, res, done);
  };
}

interface ValidatorFailure {
  path?: string;
  message?: string;
  errorCode?: string;
}

/**
 * The validator's failures of patterns that stand for a named rule of ours (the `Did` pattern)
 * restated as that rule, saying what is wrong with the value sent rather than quoting the regex.
 */
function restateRuleFailures(err: unknown, req: Request): unknown {
  const failures = (err as { errors?: ValidatorFailure[] }).errors;
  if (!Array.isArray(failures)) return err;
  for (const f of failures) {
    const pattern = /^must match pattern "(.*)"$/s.exec(f.message ?? '')?.[1];
    const did = f.path && didPatternFailure({ keyword: f.errorCode?.replace(/\.openapi\.validation$/, '') ?? '', pattern }, valueAtPointer(requestParts(req), f.path));
    if (did) Object.assign(f, { message: did.message, errorCode: did.rule });
  }
  return err;
}

/**
 * The validator coerces query values with Number(): `limit=0x10` was 16 and `limit=1e2` 100. An
 * integer parameter is written in decimal digits; any other spelling is refused in the
 * validator's own failure shape.
 */
function integersAsWritten(req: Request, doc: OpenApiDocument): unknown {
  const parameters = (req as { openapi?: { schema?: { parameters?: OpenApiParameter[] } } }).openapi?.schema?.parameters ?? [];
  const query = new URLSearchParams(req.originalUrl.split('?', 2)[1] ?? '');
  const errors: ValidatorFailure[] = [];
  for (const ref of parameters) {
    const p = resolveParameter(ref, doc);
    if (p.in !== 'query' || p.schema?.type !== 'integer' || !p.name) continue;
    for (const value of query.getAll(p.name)) {
      if (!/^-?\d+$/.test(value)) errors.push({ path: `/query/${p.name}`, message: 'must be an integer written in decimal digits', errorCode: 'type.openapi.validation' });
    }
  }
  return errors.length ? Object.assign(new Error('request/query: integer not in decimal digits'), { status: 400, errors }) : undefined;
}

function resolveParameter(p: OpenApiParameter, doc: OpenApiDocument): OpenApiParameter & { schema?: { type?: unknown } } {
  const name = p.$ref?.replace('#/components/parameters/', '');
  return (name ? doc.components?.parameters?.[name] : p) ?? p;
}

/** The request's parts, as the validator's failure paths (/body/..., /query/x, /params/x) name them. */
function requestParts(req: Request): Record<string, unknown> {
  const pathParams = (req as { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams;
  return { body: req.body as unknown, query: req.query, params: pathParams ?? req.params, headers: req.headers };
}

const HTTP_METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options', 'trace'];

/**
 * 405 with `Allow` for a documented path asked with a method it does not document (the
 * validator lets such requests through as undocumented). HEAD is allowed wherever GET is.
 * `readOnlyPaths` are served outside the contract with GET and HEAD only (the reference page).
 * Mounted after every router, and for OPTIONS before them.
 */
export function methodNotAllowedHandler(doc: OpenApiDocument, readOnlyPaths: readonly string[] = []): RequestHandler {
  const templates = [
    ...Object.entries(doc.paths ?? {}).map(([path, item]) => {
      const allowed = HTTP_METHODS.filter((m) => m in item || (m === 'head' && 'get' in item));
      return {
        pattern: templatePattern(path),
        allow: allowed.map((m) => m.toUpperCase()),
      };
    }),
    ...readOnlyPaths.map((path) => ({ pattern: templatePattern(path), allow: ['GET', 'HEAD'] })),
  ];
  return (req, _res, next) => {
    const match = templates.find((t) => t.pattern.test(req.path));
    if (!match || match.allow.includes(req.method)) return next();
    next(
      new AppError(405, 'Method Not Allowed', {
        detail: `${req.method} is not allowed on ${req.path}; use ${match.allow.join(', ')}.`,
        headers: { Allow: match.allow.join(', ') },
      }),
    );
  };
}

/**
 * `router`, reached only by requests that the pipeline resolved (and so authenticated) and the
 * validator validated as the same operation of the contract: a request the two read differently
 * falls through to the 405/404 handlers instead of reaching a handler unchecked.
 */
export function contractOnly(router: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const validated = (req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute;
    return validated !== undefined && validated === operationOf(req)?.template ? router(req, res, next) : next();
  };
}
