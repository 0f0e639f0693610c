// CORS for browser callers of an area: only listed origins ('*' for any) get the
// Access-Control-* headers, and a preflight from one of them is answered 204 here. Every answer
// varies by Origin, so a shared cache keys on it. Without a listed origin the browser refuses
// the answer; server-side callers never send Origin and are not affected.
import type { RequestHandler } from 'express';

export interface CorsPolicy {
  origins: readonly string[];
  methods: readonly string[];
  /** Request headers a browser may send. */
  allowHeaders: readonly string[];
  /** Answer headers a browser script may read. */
  exposeHeaders?: readonly string[];
}

export function cors(policy: CorsPolicy): RequestHandler {
  const allowed = new Set(policy.origins);
  const any = allowed.has('*');
  return (req, res, next) => {
    res.vary('Origin');
    const origin = req.headers.origin;
    if (!origin || !(any || allowed.has(origin))) return next();
    res.setHeader('Access-Control-Allow-Origin', any ? '*' : origin);
    if (policy.exposeHeaders?.length) res.setHeader('Access-Control-Expose-Headers', policy.exposeHeaders.join(', '));
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      // OPTIONS itself is no method a script may use (a preflight is the browser's own).
      res.setHeader('Access-Control-Allow-Methods', policy.methods.join(', '));
      res.setHeader('Access-Control-Allow-Headers', policy.allowHeaders.join(', '));
      res.setHeader('Access-Control-Max-Age', '600');
      res.status(204).end();
      return;
    }
    next();
  };
}
