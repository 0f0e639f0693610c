// The one request-target rule, applied before anything reads the path (logging aside). Routing
// (parseurl: the path before any `?` or `#`) and the OpenAPI validator (the raw target up to
// `?`) read a target differently; once every target is a plain origin-form path, both see the
// same string, so a request the pipeline did not resolve (and authenticate) and the validator did
// not check cannot reach a handler:
//   - absolute-form (`http://host/path?q`) is reduced to its origin-form (`/path?q`), as RFC 9112
//     §3.2.2 has servers accept it, and judged as that;
//   - a fragment (`#...`), the asterisk-form (`*`) or anything not starting with `/` is refused
//     (400): no client sends one;
//   - a path with empty or dot segments (`//`, `/./`, `/../`, also percent-encoded dots) is
//     redirected to its cleaned form, as Go's ServeMux and gorilla/mux do in front of Cosmos'
//     gateway, with the Location Go writes (each segment decoded and escaped again as Go escapes
//     paths: `did%3Aixo` becomes `did:ixo`, an encoded slash stays one): 301 for GET and HEAD;
//     308 for the rest, where Go answers 301 too, because clients resend a 301 as a GET without
//     its body (a USSD callback would be lost);
//   - a path whose escapes do not decode to UTF-8 text, or decode to NUL (which no database
//     stores), is refused (400), as bodies and queries holding NUL are (input.ts).
import type { RequestHandler } from 'express';
import { badRequest } from './errors.ts';

const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const SINGLE_DOT = /^(?:\.|%2e)$/i;
const DOUBLE_DOT = /^(?:\.|%2e){2}$/i;

export type TargetVerdict = { ok: true; url: string } | { ok: false; reason: string } | { redirect: string };

/** What to do with a raw request-target (`req.url` as Node read it). */
export function judgeRequestTarget(target: string): TargetVerdict {
  let url = target;
  if (ABSOLUTE_FORM.test(url)) {
    if (url.includes('#')) return { ok: false, reason: 'The request target must not contain a fragment (#).' };
    if (!URL.canParse(url)) return { ok: false, reason: 'The request target is not a valid absolute URL.' };
    url = originForm(url);
  }
  if (!url.startsWith('/')) return { ok: false, reason: 'The request target must be a path starting with /.' };
  if (url.includes('#')) return { ok: false, reason: 'The request target must not contain a fragment (#).' };
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const query = queryAt === -1 ? '' : url.slice(queryAt);
  const cleaned = cleanPath(path);
  if (cleaned !== path) return { redirect: `${cleaned.split('/').map(goSegment).join('/')}${query}` };
  if (path.includes('%')) {
    const decoded = decodeTargetPath(path);
    if (decoded === undefined) return { ok: false, reason: 'The request target\'s path is not valid percent-encoding of UTF-8 text.' };
    if (decoded.includes('\u0000')) return { ok: false, reason: 'The request target\'s path must not contain the NUL character (%00).' };
  }
  return { ok: true, url };
}

/**
 * The path and query of an absolute-form target as sent: WHATWG's URL would resolve its dot
 * segments (and re-escape it), so the rule would not see what the client asked for.
 */
function originForm(absolute: string): string {
  const afterAuthority = absolute.slice(absolute.indexOf('//') + 2);
  const at = afterAuthority.search(/[/?]/);
  if (at === -1) return '/';
  return afterAuthority[at] === '?' ? `/${afterAuthority.slice(at)}` : afterAuthority.slice(at);
}

/** `path` without empty and dot segments; a trailing slash stays (Go's cleanPath). */
export function cleanPath(path: string): string {
  const out: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || SINGLE_DOT.test(segment)) continue;
    if (DOUBLE_DOT.test(segment)) out.pop();
    else out.push(segment);
  }
  const cleaned = `/${out.join('/')}`;
  return path.endsWith('/') && cleaned !== '/' ? `${cleaned}/` : cleaned;
}

/** Go's URL.Path for a raw path: every %XX decoded; undefined for a bad escape (Go answers 400). */
export function decodeTargetPath(raw: string): string | undefined {
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** Characters Go's URL.EscapedPath leaves as they are; every other byte becomes %XX (upper case). */
const PATH_SAFE = /^[A-Za-z0-9\-_.~$&+,/:;=@]$/;

/** Bytes escaped as Go escapes a path (url.URL.EscapedPath); `/` kept only as a separator. */
function escapeBytes(bytes: Uint8Array, keepSlash: boolean): string {
  let escaped = '';
  for (const byte of bytes) {
    const c = String.fromCharCode(byte);
    escaped += byte < 0x80 && PATH_SAFE.test(c) && (keepSlash || c !== '/') ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return escaped;
}

/** A decoded path escaped as Go escapes one (url.URL.EscapedPath), as in the Location of Go's redirects. */
export function goEscapedPath(path: string): string {
  return escapeBytes(Buffer.from(path, 'utf8'), true);
}

/**
 * A raw segment as Go writes it back: its bytes (each %XX decoded, anything else as sent) escaped
 * again. Every byte that is not plainly safe is escaped, an encoded slash, a backslash and a bad
 * escape's `%` included, so no Location can start `//` or `/\` (another host, to a browser).
 */
function goSegment(raw: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(raw[i]!, 'utf8'));
    }
  }
  return escapeBytes(Uint8Array.from(bytes), false);
}

/** First middleware of the app: every later one sees only clean origin-form targets. */
export const requestTargetRule: RequestHandler = (req, res, next) => {
  const verdict = judgeRequestTarget(req.url);
  if ('redirect' in verdict) {
    const status = req.method === 'GET' || req.method === 'HEAD' ? 301 : 308;
    res.writeHead(status, { Location: verdict.redirect, 'Content-Length': 0 });
    res.end();
    return;
  }
  if (!verdict.ok) return next(badRequest(verdict.reason, undefined, 'invalid-request-target'));
  req.url = verdict.url;
  req.originalUrl = verdict.url;
  next();
};
