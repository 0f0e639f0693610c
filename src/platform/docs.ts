// The contract for people and tools: GET /openapi.json (the bundled document) and GET /docs, an
// API reference page rendered by Redoc from that document. Redoc's standalone bundle is served
// from the installed npm package, never a CDN, and the page's Content-Security-Policy lets it
// load nothing from anywhere else.
import { createRequire } from 'node:module';
import type { RequestHandler, Router } from 'express';
import { caseSensitiveRouter } from './http/scope.ts';
import { bundledContract } from './contract.ts';

const REDOC_BUNDLE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

export const DOCS_PATHS = ['/openapi.json', '/docs', '/docs/redoc.standalone.js'];

// Relative URLs, so the page also works behind a proxy that mounts Hearth under a prefix.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hearth API reference</title>
<link rel="icon" href="data:,">
</head>
<body>
<redoc spec-url="openapi.json" hide-hostname="true" expand-responses="200,201" path-in-middle-panel="true"></redoc>
<script src="docs/redoc.standalone.js"></script>
</body>
</html>
`;

// Redoc styles with inline <style> (styled-components) and runs its search index in a blob: worker.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * A reference page. Asked for with a trailing slash, its relative URLs would resolve one level
 * too deep (/docs/docs/redoc.standalone.js, a blank page): that is redirected to the page, by a
 * relative Location too.
 */
function servePage(html: string): RequestHandler {
  return (req, res) => {
    if (req.path.endsWith('/')) {
      const q = req.originalUrl.indexOf('?');
      const name = req.path.slice(0, -1).split('/').pop()!;
      res.redirect(301, `../${name}${q >= 0 ? req.originalUrl.slice(q) : ''}`);
      return;
    }
    res.type('html').set({ 'Content-Security-Policy': CSP, 'Cache-Control': 'no-cache' }).send(html);
  };
}

/**
 * `publicUrl`: where partners reach this instance (PUBLIC_BASE_URL): the served document names it
 * as its server, so a client generated from it calls this instance, not the bundle's example.
 */
export function docsRouter(publicUrl: string): Router {
  const router = caseSensitiveRouter();
  const served = JSON.stringify({ ...bundledContract(), servers: [{ url: publicUrl, description: 'This Hearth instance' }] });
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').set('Cache-Control', 'no-cache').send(served);
  });
  router.get('/docs', servePage(PAGE));
  router.get('/docs/redoc.standalone.js', (_req, res) => {
    res.type('text/javascript').set('Cache-Control', 'public, max-age=86400').sendFile(REDOC_BUNDLE);
  });
  return router;
}
