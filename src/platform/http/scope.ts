// Routes each request only into the router of its own area: Express otherwise walks every
// route layer of every router mounted before the matching one, on every request.
import { Router, type RequestHandler } from 'express';

export interface RouterScope {
  /** The router serves these paths and everything under them. */
  prefixes?: string[];
  /** The router serves exactly these paths. */
  paths?: string[];
}

/** True when `path` is `prefix` itself or lies under it (`/chain` covers `/chain/x`, not `/chainx`). */
export function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** `router` for requests inside `scope`; every other request skips it untouched. */
export function scopedRouter(router: RequestHandler, scope: RouterScope): RequestHandler {
  const prefixes = scope.prefixes ?? [];
  // Express matches a path with or without one trailing slash.
  const paths = new Set((scope.paths ?? []).flatMap((p) => [p, p.endsWith('/') ? p : `${p}/`]));
  return (req, res, next) => {
    const path = req.path;
    if (paths.has(path) || prefixes.some((p) => isUnder(path, p))) return router(req, res, next);
    next();
  };
}

/**
 * A router whose paths match case-sensitively, as the app's own and the contract's do. Express
 * routers ignore case by default, which would let `/AGENT/plugins` reach a handler past the
 * validator, whose groups are case-sensitive.
 */
export function caseSensitiveRouter(): Router {
  return Router({ caseSensitive: true });
}
