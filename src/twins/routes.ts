// Area A's HTTP layer: thin handlers over the services. The pipeline has already authenticated
// the operation (401/403) and the validator has checked its parameters and body before these run.
import { hash } from 'node:crypto';
import fresh from 'fresh';
import type { Request, Response, Router } from 'express';
import { principalOf } from '../platform/http/auth.ts';
import { notFound } from '../platform/http/errors.ts';
import type {
  ClaimStatus,
  CollectionCreateRequest,
  CollectionUpdateRequest,
  CredentialStatusChangeRequest,
  CredentialVerifyRequest,
  DrawCreateRequest,
  EntityCreateRequest,
  EntityUpdateRequest,
  KptClaimRequest,
  TestGroup,
} from '../../generated/openapi/types.gen.ts';
import type { ClaimService } from './claims/claims.service.ts';
import type { CollectionService } from './claims/collections.service.ts';
import type { DrawService } from './claims/draws.service.ts';
import { STATUS_LIST_TTL_MS, type StatusPurpose } from './credentials/credential-status.ts';
import type { CredentialStatusService } from './credentials/credential-status.service.ts';
import type { EntityService } from './entities/entities.service.ts';
import { KPT_CONTEXT_BYTES, KPT_CONTEXT_PATH } from './credentials/kpt-context.ts';
import type { CreationAnswer } from './idempotency.ts';
import { renderReportSvg } from './report/report.ts';
import { caseSensitiveRouter } from '../platform/http/scope.ts';

export interface TwinsRouteDeps {
  entities: EntityService;
  claims: ClaimService;
  collections: CollectionService;
  draws: DrawService;
  statuses: CredentialStatusService;
  evidence(cid: string): Promise<{ mediaType: string; bytes: Buffer } | undefined>;
  verifyCredential(vc: Record<string, unknown>): Promise<unknown>;
  publicBaseUrl?: string;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const int = (v: unknown) => (v === undefined ? undefined : Number(v));

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

export function twinsRouter(deps: TwinsRouteDeps): Router {
  const router = caseSensitiveRouter();
  const link = (path: string) => `${deps.publicBaseUrl?.replace(/\/$/, '') ?? ''}${path}`;

  router.post('/v1/entities', async (req: Request, res: Response) => {
    const answer = await deps.entities.createOnce(principalOf(req), req.body as EntityCreateRequest, req.get('Idempotency-Key') || undefined);
    sendCreation(res, answer, link(`/v1/entities/${answer.resourceId}`));
  });

  router.get('/v1/entities', async (req, res) => {
    const q = req.query;
    res.json(
      await deps.entities.list({
        type: str(q.type), protocol: str(q.protocol), controller: str(q.controller),
        relatedTo: str(q.relatedTo), role: str(q.role), cursor: str(q.cursor), limit: int(q.limit),
      }),
    );
  });

  router.get('/v1/entities/:did', async (req, res) => {
    const entity = await deps.entities.get(req.params.did);
    if (!entity) throw notFound(`No entity ${req.params.did}.`);
    res.json(entity);
  });

  router.patch('/v1/entities/:did', async (req, res) => {
    res.json(await deps.entities.update(principalOf(req), req.params.did, req.body as EntityUpdateRequest));
  });

  router.post('/v1/claims', async (req, res) => {
    const { created, claim, replayed } = await deps.claims.submit(principalOf(req), req.body as KptClaimRequest, {
      idempotencyKey: req.get('Idempotency-Key') || undefined,
    });
    const location = link(`/v1/claims/${claim.id}`);
    if (replayed) sendCreation(res, { ...replayed, resourceId: claim.id, replayed: true }, location);
    else res.status(created ? 201 : 200).location(location).type('json').send(claim.toJson());
  });

  router.get('/v1/claims', async (req, res) => {
    const q = req.query;
    res.json(
      await deps.claims.list({
        collection: str(q.collection), household: str(q.household), group: str(q.group) as TestGroup | undefined,
        status: str(q.status) as ClaimStatus | undefined, updatedSince: str(q.updatedSince), cursor: str(q.cursor), limit: int(q.limit),
      }),
    );
  });

  router.get('/v1/claims/:id', async (req, res) => {
    const claim = await deps.claims.getJson(req.params.id);
    if (!claim) throw notFound(`No claim ${req.params.id}.`);
    res.type('json').send(claim);
  });

  router.post('/v1/collections', async (req, res) => {
    const answer = await deps.collections.createOnce(principalOf(req), req.body as CollectionCreateRequest, req.get('Idempotency-Key') || undefined);
    sendCreation(res, answer, link(`/v1/collections/${answer.resourceId}`));
  });

  router.get('/v1/collections', async (req, res) => {
    res.json(await deps.collections.list({ cursor: str(req.query.cursor), limit: int(req.query.limit) }));
  });

  // Registered before /:id so "report.svg" is never read as part of an id.
  router.get('/v1/collections/:id/report.svg', async (req, res) => {
    const report = await deps.collections.report(req.params.id);
    // Opened on its own, an SVG is a document: it may run nothing and load nothing.
    res.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    res.type('image/svg+xml').send(renderReportSvg(report));
  });

  router.get('/v1/collections/:id/report', async (req, res) => {
    res.json(await deps.collections.report(req.params.id));
  });

  router.post('/v1/collections/:id/draws', async (req, res) => {
    const answer = await deps.draws.createOnce(principalOf(req), req.params.id, req.body as DrawCreateRequest, req.get('Idempotency-Key') || undefined);
    sendCreation(res, answer, link(`/v1/collections/${encodeURIComponent(req.params.id)}/draws/${answer.resourceId}`));
  });

  router.get('/v1/collections/:id/draws/:drawId', async (req, res) => {
    res.json(await deps.draws.get(req.params.id, req.params.drawId));
  });

  router.post('/v1/collections/:id/draws/:drawId/reveal', async (req, res) => {
    res.json(await deps.draws.reveal(principalOf(req), req.params.id, req.params.drawId));
  });

  router.patch('/v1/collections/:id', async (req, res) => {
    res.json(await deps.collections.update(principalOf(req), req.params.id, req.body as CollectionUpdateRequest));
  });

  router.get('/v1/collections/:id', async (req, res) => {
    res.json(await deps.collections.get(req.params.id));
  });

  router.get('/v1/evidence/:cid', async (req, res) => {
    const blob = await deps.evidence(req.params.cid);
    if (!blob) throw notFound(`No evidence ${req.params.cid}.`);
    // Content-addressed: the bytes under a CID never change.
    res.set('Content-Type', blob.mediaType).set('Cache-Control', 'public, max-age=31536000, immutable');
    sendConditionally(req, res, `"${req.params.cid}"`, blob.bytes);
  });

  router.post('/v1/credentials/verify', async (req, res) => {
    res.json(await deps.verifyCredential((req.body as CredentialVerifyRequest).verifiableCredential));
  });

  router.get('/v1/credentials/status/:purpose/:list', async (req, res) => {
    const body = JSON.stringify(await deps.statuses.listCredential(req.params.purpose as StatusPurpose, Number(req.params.list)));
    res.set('Cache-Control', `public, max-age=${STATUS_LIST_TTL_MS / 1000}`);
    sendConditionally(req, res, `"${hash('sha256', body, 'base64url')}"`, body, 'json');
  });

  router.get('/v1/claims/:id/credential/status', async (req, res) => {
    res.json(await deps.statuses.get(req.params.id));
  });

  router.post('/v1/claims/:id/credential/status', async (req, res) => {
    const principal = principalOf(req);
    res.json(await deps.statuses.change({ did: principal.did, keyId: principal.keyId }, req.params.id, req.body as CredentialStatusChangeRequest));
  });

  router.get(KPT_CONTEXT_PATH, (_req, res) => {
    res.type('application/ld+json').set('Cache-Control', 'public, max-age=86400').send(KPT_CONTEXT_BYTES);
  });

  return router;
}
