// Merges openapi/openapi.yaml (root) with every other openapi/*.yaml area file into one
// document, generated/openapi.json. Areas own their files, so they never edit the same one;
// a path, operationId or component defined twice is an error, never a silent overwrite.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

type Doc = Record<string, any>;

const dir = 'openapi';
const root: Doc = parse(readFileSync(join(dir, 'openapi.yaml'), 'utf8'));
root.paths ??= {};
root.components ??= {};
const operationIds = new Set<string>();

for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'openapi.yaml').sort()) {
  const part: Doc = parse(readFileSync(join(dir, file), 'utf8')) ?? {};
  for (const [path, item] of Object.entries<Doc>(part.paths ?? {})) {
    if (root.paths[path]) throw new Error(`${file}: path ${path} is already defined`);
    for (const op of Object.values<Doc>(item)) {
      // A file marked x-hearth-rate-limited (its area limits every request) marks each operation.
      if (part['x-hearth-rate-limited'] && op?.responses) op['x-hearth-rate-limited'] ??= true;
      if (op?.operationId) {
        if (operationIds.has(op.operationId)) throw new Error(`${file}: operationId ${op.operationId} is already defined`);
        operationIds.add(op.operationId);
      }
    }
    root.paths[path] = item;
  }
  for (const [kind, entries] of Object.entries<Doc>(part.components ?? {})) {
    root.components[kind] ??= {};
    for (const [name, value] of Object.entries(entries)) {
      if (root.components[kind][name]) throw new Error(`${file}: components.${kind}.${name} is already defined`);
      root.components[kind][name] = value;
    }
  }
  for (const [name, item] of Object.entries<Doc>(part.webhooks ?? {})) {
    if (root.webhooks?.[name]) throw new Error(`${file}: webhook ${name} is already defined`);
    root.webhooks = { ...root.webhooks, [name]: item };
  }
  if (part.tags) root.tags = [...(root.tags ?? []), ...part.tags];
}

// Declared here once for all, so no operation can leave them out:
//   - a fault (500) or an outage (503 with Retry-After), unless the operation declares its own or
//     answers failures in its body;
//   - X-Request-Id and traceparent, which every request may send and every answer carries;
//   - the RateLimit headers on every answer of a rate-limited operation (x-hearth-rate-limited),
//     and its 429 (TooManyRequests, problem+json) unless it declares its own.
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const REF_PREFIX = '#/components/responses/';
const traced = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, traceparent: { $ref: '#/components/headers/traceparent' } };
const limited = { RateLimit: { $ref: '#/components/headers/RateLimit' }, 'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' } };
/** A response with `headers` added (its own win); a shared response is copied, not changed for every operation that uses it. */
function withHeaders(response: Doc, headers: Doc): Doc {
  const resolved: Doc = response.$ref ? structuredClone(root.components.responses[String(response.$ref).slice(REF_PREFIX.length)]) : response;
  return { ...resolved, headers: { ...headers, ...resolved.headers } };
}
/** A shared response with the RateLimit headers, itself shared (`<name>RateLimited`): one copy, not one per operation. */
function rateLimited(response: Doc): Doc {
  if (!response.$ref) return withHeaders(response, { ...traced, ...limited });
  const name = `${String(response.$ref).slice(REF_PREFIX.length)}RateLimited`;
  root.components.responses[name] ??= withHeaders(response, limited);
  return { $ref: `${REF_PREFIX}${name}` };
}
for (const item of Object.values<Doc>(root.paths)) {
  for (const [method, op] of Object.entries<Doc>(item)) {
    if (!HTTP_METHODS.has(method)) continue;
    op.responses ??= {};
    if (!op['x-hearth-failures-in-body']) {
      op.responses['500'] ??= { $ref: `${REF_PREFIX}InternalServerError` };
      op.responses['503'] ??= { $ref: `${REF_PREFIX}ServiceUnavailable` };
    }
    if (op['x-hearth-rate-limited']) op.responses['429'] ??= { $ref: `${REF_PREFIX}TooManyRequests` };
    op.parameters = [...(op.parameters ?? []), { $ref: '#/components/parameters/X-Request-Id' }, { $ref: '#/components/parameters/traceparent' }];
    for (const [status, response] of Object.entries<Doc>(op.responses)) {
      op.responses[status] = op['x-hearth-rate-limited'] ? rateLimited(response) : response.$ref ? response : withHeaders(response, traced);
    }
  }
}
// Shared responses are used as they are by operations that are not rate limited.
for (const response of Object.values<Doc>(root.components.responses ?? {})) response.headers = { ...traced, ...response.headers };

root.paths = Object.fromEntries(Object.entries(root.paths).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync('generated/openapi.json', JSON.stringify(root, null, 2) + '\n');
