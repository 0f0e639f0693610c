// The contract for people and tools: GET /openapi.json (the bundled document) and GET /docs, an
// API reference page rendered by Redoc from that document; area C's routes, generated from the
// proto annotations, at GET /docs/chain-openapi.json and on a page of their own, GET /docs/chain
// (Redoc shows one document a page). Redoc's standalone bundle is served from the installed npm
// package, never a CDN, and the pages' Content-Security-Policy lets them load nothing from
// anywhere else.
import { createRequire } from 'node:module';
import type { RequestHandler, Router } from 'express';
import { caseSensitiveRouter } from './http/scope.ts';
import { bundledContract, type OpenApiDocument } from './contract.ts';

const REDOC_BUNDLE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

export const DOCS_PATHS = ['/openapi.json', '/docs', '/docs/redoc.standalone.js', '/docs/chain', '/docs/chain-openapi.json'];

interface Page {
  title: string;
  /** The page's URLs, relative to it, so it also works behind a proxy that mounts Hearth under a prefix. */
  spec: string;
  script: string;
  /** The page's own entry of the navigation, which is text, not a link. */
  current: 'main' | 'chain';
  /** Where the other page is, relative to this one. */
  other: string;
}

const NAV = { main: 'Hearth API (areas A, B, D)', chain: 'Chain gateway (area C)' };

function pageHtml(page: Page): string {
  const entry = (which: Page['current']) => (which === page.current ? `<strong>${NAV[which]}</strong>` : `<a href="${page.other}">${NAV[which]}</a>`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title}</title>
<link rel="icon" href="data:,">
</head>
<body style="margin: 0">
<nav style="font: 14px/1.5 sans-serif; padding: 8px 20px; border-bottom: 1px solid #e0e0e0">${entry('main')} · ${entry('chain')}</nav>
<redoc spec-url="${page.spec}" hide-hostname="true" expand-responses="200,201" path-in-middle-panel="true"></redoc>
<script src="${page.script}"></script>
</body>
</html>
`;
}

// /docs/chain's relative URLs resolve from /docs/, /docs's from /.
const MAIN_PAGE = pageHtml({ title: 'Hearth API reference', spec: 'openapi.json', script: 'docs/redoc.standalone.js', current: 'main', other: 'docs/chain' });
const CHAIN_PAGE = pageHtml({ title: 'Hearth chain gateway reference', spec: 'chain-openapi.json', script: 'redoc.standalone.js', current: 'chain', other: '../docs' });

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
 * A reference page (/docs, /docs/chain). Asked for with a trailing slash, its relative URLs would
 * resolve one level too deep (/docs/docs/redoc.standalone.js, a blank page): that is redirected
 * to the page, by a relative Location too.
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
 * `publicUrl`: where partners reach this instance (PUBLIC_BASE_URL): the served documents name it
 * as their server, so a client generated from one calls this instance, not the bundle's example.
 * `chainDocument`: area C's document, its paths where this instance's gateway answers them.
 */
export function docsRouter(publicUrl: string, chainDocument: OpenApiDocument): Router {
  const router = caseSensitiveRouter();
  const servers = [{ url: publicUrl, description: 'This Hearth instance' }];
  const served = JSON.stringify({ ...bundledContract(), servers });
  const chainServed = JSON.stringify({ ...chainDocument, servers });
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').set('Cache-Control', 'no-cache').send(served);
  });
  router.get('/docs/chain-openapi.json', (_req, res) => {
    res.type('application/json').set('Cache-Control', 'no-cache').send(chainServed);
  });
  router.get('/docs', servePage(MAIN_PAGE));
  router.get('/docs/chain', servePage(CHAIN_PAGE));
  router.get('/docs/redoc.standalone.js', (_req, res) => {
    res.type('text/javascript').set('Cache-Control', 'public, max-age=86400').sendFile(REDOC_BUNDLE);
  });
  return router;
}
