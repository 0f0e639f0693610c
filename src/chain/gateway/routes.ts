// The route table, derived at start-up from the google.api.http option of every method of the
// compiled-in services (and its additional_bindings). Annotations are written under
// ANNOTATION_PREFIX; the router mounts the rest under each configured prefix.
import { getOption, type DescMethod } from '@bufbuild/protobuf';
import { http } from '../../../generated/proto/google/api/annotations_pb.ts';
import type { HttpRule } from '../../../generated/proto/google/api/http_pb.ts';
import { QUERY_SERVICES, type GatewayStyle } from '../services.ts';

export const ANNOTATION_PREFIX = '/chain';

type Segment = { literal: string } | { variable: string };

export interface Route {
  verb: string;
  template: string;
  method: DescMethod;
  segments: Segment[];
}

export interface RouteMatch {
  route: Route;
  vars: Record<string, string>;
}

function bindingsOf(rule: HttpRule): { verb: string; path: string }[] {
  const p = rule.pattern;
  const own = p.case === undefined ? [] : p.case === 'custom' ? [{ verb: p.value.kind.toUpperCase(), path: p.value.path }] : [{ verb: p.case.toUpperCase(), path: p.value }];
  return [...own, ...rule.additionalBindings.flatMap(bindingsOf)];
}

function parseTemplate(template: string, method: DescMethod): Segment[] {
  if (!template.startsWith(ANNOTATION_PREFIX + '/') && template !== ANNOTATION_PREFIX) {
    throw new Error(`${method.parent.typeName}.${method.name}: http path ${template} does not start with ${ANNOTATION_PREFIX}`);
  }
  return template
    .slice(ANNOTATION_PREFIX.length)
    .split('/')
    .filter(Boolean)
    .map((part) => {
      const v = /^\{([A-Za-z_][\w.]*)(?:=\*)?\}$/.exec(part);
      if (v) {
        const field = method.input.fields.find((f) => f.name === v[1]);
        if (!field || (field.fieldKind !== 'scalar' && field.fieldKind !== 'enum')) throw new Error(`${template}: {${v[1]}} is not a scalar or enum field of ${method.input.typeName}`);
        return { variable: v[1]! };
      }
      if (/[{}*]/.test(part)) throw new Error(`${template}: unsupported path segment ${part}`);
      return { literal: part };
    });
}

/** Literal segments sort before variables, position by position, so they win whatever the proto order. */
const specificity = (r: Route) => r.segments.map((s) => ('literal' in s ? '0' : '1')).join('');

/** Every binding of every compiled-in method, in proto order (the chain OpenAPI document lists them so). */
export function annotatedRoutes(): Route[] {
  const routes: Route[] = [];
  for (const service of QUERY_SERVICES) {
    for (const method of service.methods) {
      const rule = getOption(method, http);
      if (rule.body) throw new Error(`${service.typeName}.${method.name}: request bodies are not supported by this gateway`);
      for (const { verb, path } of bindingsOf(rule)) routes.push({ verb, template: path, method, segments: parseTemplate(path, method) });
    }
  }
  return routes;
}

/** The routes in matching order. */
export function buildRoutes(): Route[] {
  return annotatedRoutes().sort((a, b) => (specificity(a) < specificity(b) ? -1 : specificity(a) > specificity(b) ? 1 : 0));
}

/**
 * How paths match. v1 is grpc-gateway v1's pattern matcher: a variable takes any segment, the
 * empty one after a trailing slash included, HEAD is a method of its own (no route has it), and
 * the last segment is read for a custom verb first (v1Verb). v2 ignores a trailing slash, wants a
 * variable non-empty and answers HEAD as GET.
 */
function matches(route: Route, parts: string[], dialect: GatewayStyle): Record<string, string> | undefined {
  if (route.segments.length !== parts.length) return undefined;
  const vars: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = route.segments[i]!;
    if ('literal' in seg) {
      if (seg.literal !== parts[i]) return undefined;
    } else {
      if (!parts[i] && dialect === 'v2') return undefined;
      vars[seg.variable] = parts[i]!;
    }
  }
  return vars;
}

/**
 * The path segments grpc-gateway v1's mux matches, or undefined for none: it splits a custom verb
 * off the last segment at its last ":". A verb alone (":abc") is no route; an empty one is dropped
 * (`params:` is `params`); any other is put back, as no route here has a verb (the annotations'
 * patterns are generated with AssumeColonVerbOpt(false)), so a DID keeps its colons.
 */
function v1Verb(parts: string[]): string[] | undefined {
  const last = parts[parts.length - 1];
  const colon = last?.lastIndexOf(':') ?? -1;
  if (colon === 0) return undefined;
  return colon > 0 && colon === last!.length - 1 ? [...parts.slice(0, -1), last!.slice(0, -1)] : parts;
}

export class RouteTable {
  constructor(
    readonly routes: Route[],
    readonly dialect: GatewayStyle,
  ) {}

  /** `path`: the decoded path segments after the prefix. */
  find(verb: string, path: string[]): { match?: RouteMatch; allowed: string[] } {
    const allowed = new Set<string>();
    const parts = this.dialect === 'v1' ? v1Verb(path) : path;
    if (!parts) return { allowed: [] };
    const headAsGet = this.dialect === 'v2' && verb === 'HEAD';
    for (const route of this.routes) {
      const vars = matches(route, parts, this.dialect);
      if (!vars) continue;
      if (route.verb === verb || (headAsGet && route.verb === 'GET')) return { match: { route, vars }, allowed: [] };
      allowed.add(route.verb);
    }
    return { allowed: [...allowed] };
  }
}
