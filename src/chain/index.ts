// Area C: the protocol query node (gRPC) and the HTTP/JSON gateway built from the proto
// annotations. See docs/chain.md and ../shared/design/chain-gateway.md.
import type { Area, AreaContext } from '../platform/area.ts';
import { areaRateLimit } from '../platform/http/rate-limit.ts';
import { isUnder } from '../platform/http/scope.ts';
import { cosmosErrorRenderer } from './gateway/errors.ts';
import { cosmosEdge, gatewayMounts, gatewayRouter } from './gateway/router.ts';
import { buildRoutes, RouteTable } from './gateway/routes.ts';
import { embeddedUpstream, grpcUpstream } from './gateway/upstream.ts';
import type { TwinsReadPort } from '../twins/read-port.ts';
import { ChainRepository } from './node/repository.ts';
import { chainOpenApiDocument } from './openapi.ts';
import type { OpenApiDocument } from '../platform/contract.ts';
import { startGrpcNode } from './node/server.ts';
import { queryServices, registerServices } from './node/services.ts';
import { disabledMethodSet } from './services.ts';
import { caseSensitiveRouter } from '../platform/http/scope.ts';

export interface ChainArea extends Area {
  /** Port of the embedded gRPC node, when it listens. */
  grpcPort?: number;
  /** The gateway's routes as OpenAPI, under the paths this instance answers them at. */
  openApiDocument: OpenApiDocument;
}

/** `twins`: area A's read port, the node's only way to its entities, collections and claims. */
export async function createChainArea(ctx: AreaContext, twins: TwinsReadPort): Promise<ChainArea> {
  const { config, logger, keys } = ctx;
  const disabled = disabledMethodSet(config.CHAIN_DISABLED_METHODS);
  const services = queryServices({ config, reads: new ChainRepository(twins), disabled });
  // Built before anything listens: a bad annotation stops start-up with nothing left open.
  const routes = new RouteTable(buildRoutes(), config.CHAIN_GATEWAY_STYLE);

  let grpcPort: number | undefined;
  if (config.GRPC_ENABLED) {
    const node = await startGrpcNode(registerServices(services), config.GRPC_HOST, config.GRPC_PORT, { deadlineMs: config.REQUEST_DEADLINE_MS });
    grpcPort = node.port;
    ctx.onClose(() => node.stop());
    logger.info({ host: config.GRPC_HOST, port: node.port }, 'chain query node listening (gRPC)');
  }

  const upstream = config.CHAIN_GRPC_URL
    ? grpcUpstream(config.CHAIN_GRPC_URL, config.CHAIN_GRPC_TIMEOUT_MS)
    : embeddedUpstream(services, config.CHAIN_GRPC_TIMEOUT_MS);
  ctx.onClose(() => upstream.close());

  const gateway = gatewayRouter({ config, keys, logger, routes, upstream, disabled });
  // Case-sensitive like the upstream gateway: /Chain/... is not a route.
  const router = caseSensitiveRouter();
  const mounts = gatewayMounts(config);
  if (config.CHAIN_GATEWAY_STYLE === 'v1') router.use(cosmosEdge(mounts, gateway));
  else for (const mount of mounts) router.use(mount, gateway);
  const isChainPath = (path: string) => mounts.some((m) => isUnder(path, m));
  const renderError = cosmosErrorRenderer(config.CHAIN_GATEWAY_STYLE);
  // Per client address, as a gate: the gateway takes no key (unless CHAIN_GATEWAY_AUTH, checked
  // inside its router), and every request counts, the edge's redirects and 501s too.
  const limit = areaRateLimit({ area: 'chain', limit: config.CHAIN_RATE_LIMIT_PER_MINUTE, stores: ctx.rateLimitStores, applies: (req) => isChainPath(req.path) });
  return {
    gates: [limit.count],
    uncontractedRouter: router,
    // Errors before the gateway's router (a bad request target, an outage) on a gateway path, too.
    errorRendererFor: (req) => (isChainPath(req.path) ? renderError : undefined),
    routeLabelFor: (req) => (isChainPath(req.originalUrl.split('?')[0]!) ? 'chain' : undefined),
    grpcPort,
    openApiDocument: chainOpenApiDocument(mounts[0]!),
  };
}
