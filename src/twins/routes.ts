// Area A's HTTP layer: thin handlers over the services. The pipeline has already authenticated
// the operation (401/403) and the validator has checked its parameters and body before these run.
import { hash } from 'node:crypto';
import fresh from 'fresh';
import type { Request, Response } from 'express';
import type { CredentialVerifyResult } from '../../generated/openapi/types.gen.ts';
import { notFound } from '../platform/http/errors.ts';
import { SENT, type Handlers, type OperationsTagged } from '../platform/http/handlers.ts';
import type { ClaimService } from './claims/claims.service.ts';
import type { CollectionService } from './claims/collections.service.ts';
import type { DrawService } from './claims/draws.service.ts';
import { STATUS_LIST_TTL_MS } from './credentials/credential-status.ts';
import type { CredentialStatusService } from './credentials/credential-status.service.ts';
import type { EntityService } from './entities/entities.service.ts';
import { KPT_CONTEXT_BYTES } from './credentials/kpt-context.ts';
import type { CreationAnswer } from './idempotency.ts';
import { renderReportSvg } from './report/report.ts';

export interface TwinsRouteDeps {
  entities: EntityService;
  claims: ClaimService;
  collections: CollectionService;
  draws: DrawService;
  statuses: CredentialStatusService;
  evidence(cid: string): Promise<{ mediaType: string; bytes: Buffer } | undefined>;
  verifyCredential(vc: Record<string, unknown>): Promise<CredentialVerifyResult>;
  publicBaseUrl?: string;
}

/**
 * Sends `body` with its ETag, or 304 when the request's If-None-Match names it. The origin
 * evaluates If-None-Match whatever the request's Cache-Control (RFC 9110 §13.2.1; no-cache asks
 * caches to revalidate, which this is): Express's req.fresh would send the bytes.
 */
function sendConditionally(req: Request, res: Response, etag: string, body: string | Buffer, type?: string): void {
  res.set('ETag', etag);
  if (fresh({ 'if-none-match': req.headers['if-none-match'] }, { etag })) {
    res.status(304).end();
    return;
  }
  if (type) res.type(type);
  res.send(body);
}

/** The header marking a retry's answer as the first request's again (its status and body, byte for byte). */
const REPLAYED_HEADER = 'Idempotent-Replayed';

/** A creating POST's answer: a retry with the first request's Idempotency-Key gets that request's answer, marked. */
export function sendCreation(res: Response, answer: CreationAnswer, location: string): void {
  if (answer.replayed) res.set(REPLAYED_HEADER, 'true');
  res.status(answer.status).location(location).type('json').send(answer.json);
}

/** A header sent empty is one not sent (the validator refuses empty query parameters). */
const given = (v: string | undefined) => v || undefined;

/** Area A's operations but the change feed and webhooks (events/routes.ts). */
export function twinsHandlers(deps: TwinsRouteDeps) {
  const link = (path: string) => `${deps.publicBaseUrl?.replace(/\/$/, '') ?? ''}${path}`;
  return {
    createEntity: async ({ body, headers, principal, res }) => {
      const answer = await deps.entities.createOnce(principal, body, given(headers['Idempotency-Key']));
      sendCreation(res, answer, link(`/v1/entities/${answer.resourceId}`));
      return SENT;
    },

    // The services take the contract's query as their filter; the validator admits no other parameter.
    listEntities: async ({ query }) => ({ status: 200, body: await deps.entities.list(query) }),

    getEntity: async ({ path }) => {
      const entity = await deps.entities.get(path.did);
      if (!entity) throw notFound(`No entity ${path.did}.`);
      return { status: 200, body: entity };
    },

    updateEntity: async ({ path, body, principal }) => ({ status: 200, body: await deps.entities.update(principal, path.did, body) }),

    // The claim's stored JSON text as is, and a replay byte for byte.
    submitClaim: async ({ body, headers, principal, res }) => {
      const { created, claim, replayed } = await deps.claims.submit(principal, body, { idempotencyKey: given(headers['Idempotency-Key']) });
      const location = link(`/v1/claims/${claim.id}`);
      if (replayed) sendCreation(res, { ...replayed, resourceId: claim.id, replayed: true }, location);
      else res.status(created ? 201 : 200).location(location).type('json').send(claim.toJson());
      return SENT;
    },

    listClaims: async ({ query }) => ({ status: 200, body: await deps.claims.list(query) }),

    getClaim: async ({ path, res }) => {
      const claim = await deps.claims.getJson(path.id);
      if (!claim) throw notFound(`No claim ${path.id}.`);
      res.type('json').send(claim);
      return SENT;
    },

    createCollection: async ({ body, headers, principal, res }) => {
      const answer = await deps.collections.createOnce(principal, body, given(headers['Idempotency-Key']));
      sendCreation(res, answer, link(`/v1/collections/${answer.resourceId}`));
      return SENT;
    },

    listCollections: async ({ query }) => ({ status: 200, body: await deps.collections.list({ cursor: query.cursor, limit: query.limit }) }),

    getCollectionReportChart: async ({ path, res }) => {
      const report = await deps.collections.report(path.id);
      // Opened on its own, an SVG is a document: it may run nothing and load nothing.
      res.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox");
      res.type('image/svg+xml').send(renderReportSvg(report));
      return SENT;
    },

    getCollectionReport: async ({ path }) => ({ status: 200, body: await deps.collections.report(path.id) }),

    createDraw: async ({ path, body, headers, principal, res }) => {
      const answer = await deps.draws.createOnce(principal, path.id, body, given(headers['Idempotency-Key']));
      sendCreation(res, answer, link(`/v1/collections/${encodeURIComponent(path.id)}/draws/${answer.resourceId}`));
      return SENT;
    },

    getDraw: async ({ path }) => ({ status: 200, body: await deps.draws.get(path.id, path.drawId) }),

    revealDraw: async ({ path, principal }) => ({ status: 200, body: await deps.draws.reveal(principal, path.id, path.drawId) }),

    updateCollection: async ({ path, body, principal }) => ({ status: 200, body: await deps.collections.update(principal, path.id, body) }),

    getCollection: async ({ path }) => ({ status: 200, body: await deps.collections.get(path.id) }),

    getEvidence: async ({ path, req, res }) => {
      const blob = await deps.evidence(path.cid);
      if (!blob) throw notFound(`No evidence ${path.cid}.`);
      // Content-addressed: the bytes under a CID never change.
      res.set('Content-Type', blob.mediaType).set('Cache-Control', 'public, max-age=31536000, immutable');
      sendConditionally(req, res, `"${path.cid}"`, blob.bytes);
      return SENT;
    },

    verifyCredential: async ({ body }) => ({ status: 200, body: await deps.verifyCredential(body.verifiableCredential) }),

    getStatusListCredential: async ({ path, req, res }) => {
      const body = JSON.stringify(await deps.statuses.listCredential(path.purpose, Number(path.list)));
      res.set('Cache-Control', `public, max-age=${STATUS_LIST_TTL_MS / 1000}`);
      sendConditionally(req, res, `"${hash('sha256', body, 'base64url')}"`, body, 'json');
      return SENT;
    },

    getCredentialStatus: async ({ path }) => ({ status: 200, body: await deps.statuses.get(path.id) }),

    changeCredentialStatus: async ({ path, body, principal }) => ({
      status: 200,
      body: await deps.statuses.change({ did: principal.did, keyId: principal.keyId }, path.id, body),
    }),

    getKptContext: ({ res }) => {
      res.type('application/ld+json').set('Cache-Control', 'public, max-age=86400').send(KPT_CONTEXT_BYTES);
      return SENT;
    },
  } satisfies Handlers<OperationsTagged<'claims' | 'credentials' | 'collections' | 'entities'>>;
}
