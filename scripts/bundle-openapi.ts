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
  if (part.tags) root.tags = [...(root.tags ?? []), ...part.tags];
}

// Every operation can meet a fault (500) or an outage (503 with Retry-After): declared here once
// for all, unless the operation declares its own or answers failures in its body.
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
for (const item of Object.values<Doc>(root.paths)) {
  for (const [method, op] of Object.entries<Doc>(item)) {
    if (!HTTP_METHODS.has(method) || op['x-hearth-failures-in-body']) continue;
    op.responses ??= {};
    op.responses['500'] ??= { $ref: '#/components/responses/InternalServerError' };
    op.responses['503'] ??= { $ref: '#/components/responses/ServiceUnavailable' };
  }
}

root.paths = Object.fromEntries(Object.entries(root.paths).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync('generated/openapi.json', JSON.stringify(root, null, 2) + '\n');
