// Area D: the agent runtime and its plugins, composed for the app.
import type { RequestHandler } from 'express';
import type { AreaContext } from '../app.ts';
import { scopedRouter } from '../platform/http/scope.ts';
import { userPreferencesPlugin } from './plugins/user-preferences/index.ts';
import { MCP_PATH, mcpRouter } from './mcp.ts';
import { agentRouter } from './routes.ts';
import { loadFeaturesMap } from './runtime/features.ts';
import type { AgentPlugin } from './runtime/plugin.ts';
import { AgentRuntime } from './runtime/runtime.ts';

/** Reported to MCP clients in the initialize handshake. */
const MCP_SERVER_VERSION = '0.1.0';

/** Every plugin Hearth ships; the features map decides which load. */
export const AGENT_PLUGINS: readonly AgentPlugin[] = [userPreferencesPlugin];

export interface AgentArea {
  runtime: AgentRuntime;
  /** Mount before the OpenAPI validator: 404 for routes of plugins that are not loaded. */
  unloadedRoutesGuard: RequestHandler;
  /** The runtime's and the loaded plugins' routes. */
  routers: RequestHandler[];
}

/** Resolves the plugin set; a bad features map or manifest throws and stops boot. */
export function createAgentArea(ctx: Pick<AreaContext, 'config' | 'db' | 'logger' | 'keys'>, plugins: readonly AgentPlugin[] = AGENT_PLUGINS): AgentArea {
  const runtime = new AgentRuntime({
    plugins,
    features: loadFeaturesMap(ctx.config),
    envNames: ctx.config.agentEnvNames,
    db: ctx.db,
    logger: ctx.logger,
  });
  return {
    runtime,
    unloadedRoutesGuard: runtime.unloadedRoutesGuard(),
    routers: [scopedRouter(agentRouter(runtime), { prefixes: ['/agent'] }), scopedRouter(mcpRouter(runtime, MCP_SERVER_VERSION), { paths: [MCP_PATH] }), ...runtime.routers()],
  };
}
