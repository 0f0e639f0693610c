// The request validator built from the bundled contract, and the handlers that hold requests to it.
import * as OpenApiValidator from 'express-openapi-validator';
import { Router, type Request, type RequestHandler } from 'express';
import { AppError } from './http/errors.ts';
import type { OpenApiDocument, OpenApiParameter } from './contract.ts';
import { didPatternFailure } from './did.ts';
import { valueAtPointer } from './json-pointer.ts';
import { METHODS, operationIdOf, operationOf, templatePattern } from './http/operations.ts';

/** Every `$ref` under `value`. */
function refsUnder(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsUnder(v, into);
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string') into.add(v);
      else refsUnder(v, into);
    }
  }
  return into;
}

/**
 * The components `pathItem` refers to, directly or through other components, and the security
 * schemes: each validator copies and dereferences its document, so each holds only what its
 * operation needs (with every component, one per operation took seconds to load).
 */
function componentsOf(doc: OpenApiDocument, pathItem: unknown): Record<string, Record<string, unknown>> {
  const all = doc.components as Record<string, Record<string, unknown> | undefined> | undefined;
  const components: Record<string, Record<string, unknown>> = all?.securitySchemes ? { securitySchemes: all.securitySchemes } : {};
  const pending = [...refsUnder(pathItem, new Set())];
  const seen = new Set<string>();
  for (let ref = pending.pop(); ref !== undefined; ref = pending.pop()) {
    if (seen.has(ref)) continue;
    seen.add(ref);
    const [, , kind = '', name = ''] = ref.split('/');
    const target = all?.[kind]?.[name];
    (components[kind] ??= {})[name] = target;
    pending.push(...refsUnder(target, new Set()));
  }
  return components;
}

/**
 * One operation's validator: a document holding that operation alone (its path item's
 * parameters, the components it refers to), so the validator has one path to match, the one
 * the resolver chose. A GET is also described as HEAD, which Hearth answers as that GET: a HEAD
 * request is validated as such, its method untouched.
 */
function operationValidator(doc: OpenApiDocument, template: string, method: string): RequestHandler {
  const item = doc.paths![template]!;
  const operation = item[method]!;
  const pathItem = {
    ...(item.parameters ? { parameters: item.parameters } : {}),
    [method]: operation,
    ...(method === 'get' ? { head: operation } : {}),
  };
  const router = Router();
  router.use(
    OpenApiValidator.middleware({
      // Not the document's webhooks: they are what Hearth sends, and refer to components of their own.
      apiSpec: { openapi: doc.openapi, info: doc.info, servers: doc.servers, paths: { [template]: pathItem }, components: componentsOf(doc, pathItem) } as unknown as Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'],
      // Query and path parameters are always coerced by the library; bodies are checked as sent.
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
      validateResponses: false,
      // The bundled contract is checked once, by an independent validator in the tests
      // (docs.test.ts); each operation's validator checking its slice would compile the OpenAPI
      // schema again, blocking the event loop for seconds after start-up.
      validateApiSpec: false,
      validateSecurity: false,
      ignoreUndocumented: true,
      validateFormats: true,
    }) as unknown as RequestHandler[],
  );
  return router;
}

/**
 * Validates each request resolved to an operation (operations.ts) with that operation's own
 * validator; requests resolved to none (area C, undocumented methods) pass through. The
 * validator never searches the document for the operation: the resolver has chosen it.
 * Authentication is not its job (operations.ts runs it before the body is parsed).
 */
export function openApiRequestValidator(doc: OpenApiDocument): RequestHandler {
  const operations = new Map<string, { template: string; method: string }>();
  for (const [template, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) operations.set(operationIdOf(method, template, operation), { template, method });
    }
  }
  // Built on an operation's first request: building one takes up to about a tenth of a second of
  // CPU (the library compiles the OpenAPI schema for every validator), so all of them at start-up
  // held the event loop for seconds, long enough for a database call in flight to pass its deadline.
  const validators = new Map<string, RequestHandler>();
  const validatorOf = (operationId: string): RequestHandler | undefined => {
    const built = validators.get(operationId);
    if (built) return built;
    const operation = operations.get(operationId);
    if (!operation) return undefined;
    const validator = operationValidator(doc, operation.template, operation.method);
    validators.set(operationId, validator);
    return validator;
  };
  return (req, res, next) => {
    const validator = validatorOf(operationOf(req)?.operationId ?? '');
    if (!validator) return next();
    validator(req, res, (err?: unknown) => next(err ? restateRuleFailures(err, req) : integersAsWritten(req, doc)));
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
 * resolved operation's validator validated: its one path matched the request too (a path it
 * reads otherwise, say with an undecodable parameter, falls through to the 405/404 handlers).
 */
export function contractOnly(router: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const validated = (req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute;
    return validated !== undefined && validated === operationOf(req)?.template ? router(req, res, next) : next();
  };
}
