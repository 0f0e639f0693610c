// Area D: the agent runtime and its plugins, composed for the app.
import type { Area, AreaContext } from '../platform/area.ts';
import { areaRateLimit } from '../platform/http/rate-limit.ts';
import { isUnder } from '../platform/http/scope.ts';
import { userPreferencesPlugin } from './plugins/user-preferences/index.ts';
import { mcpErrorRendererFor, mcpHandler } from './mcp.ts';
import { agentHandlers } from './routes.ts';
import { loadFeaturesMap } from './runtime/features.ts';
import type { AgentPlugin } from './runtime/plugin.ts';
import { AgentRuntime } from './runtime/runtime.ts';

/** Reported to MCP clients in the initialize handshake. */
const MCP_SERVER_VERSION = '0.1.0';

/** Every plugin Hearth ships; the features map decides which load. */
export const AGENT_PLUGINS: readonly AgentPlugin[] = [userPreferencesPlugin];

export interface AgentArea extends Area {
  runtime: AgentRuntime;
}

/** Resolves the plugin set; a bad features map or manifest throws and stops boot. */
export function createAgentArea(ctx: Pick<AreaContext, 'config' | 'db' | 'logger' | 'keys' | 'rateLimitStores'>, plugins: readonly AgentPlugin[] = AGENT_PLUGINS): AgentArea {
  const runtime = new AgentRuntime({
    plugins,
    features: loadFeaturesMap(ctx.config),
    envNames: ctx.config.agentEnvNames,
    db: ctx.db,
    logger: ctx.logger,
  });
  const prefixes = ['/agent', ...plugins.flatMap((p) => p.routePaths ?? [])];
  const limit = areaRateLimit({ area: 'agent', limit: ctx.config.AGENT_RATE_LIMIT_PER_MINUTE, stores: ctx.rateLimitStores, applies: (req) => prefixes.some((p) => isUnder(req.path, p)) });
  return {
    runtime,
    rateLimits: [limit.count, limit.countRefused],
    // Before the contract (which documents every plugin's routes): 404 for those of plugins that are off.
    gates: [runtime.unloadedRoutesGuard()],
    handlers: {
      ...agentHandlers(
        runtime,
        mcpHandler(runtime, {
          version: MCP_SERVER_VERSION,
          corsOrigins: ctx.config.API_CORS_ORIGINS,
          retryAfterSeconds: ctx.config.RETRY_AFTER_SECONDS,
          logger: ctx.logger.child({ area: 'agent' }),
        }),
      ),
      ...runtime.handlers(),
    },
    routers: runtime.routers().map((router) => ({ router })),
    browserPrefixes: prefixes,
    errorRendererFor: mcpErrorRendererFor,
  };
}
