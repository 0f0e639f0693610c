// The orchestrator's HTTP surface of the runtime (/agent/...). Thin: the runtime does the work.
// POST /agent/mcp is mcp.ts's, which answers in JSON-RPC's shape of its own.
import type { Handler, Handlers, OperationsTagged } from '../platform/http/handlers.ts';
import { DEFAULT_ROOM_ID } from './runtime/plugin.ts';
import type { AgentRuntime } from './runtime/runtime.ts';

export function agentHandlers(runtime: AgentRuntime, mcp: Handler<'postAgentMcp'>) {
  return {
    postAgentMcp: mcp,

    listAgentPlugins: () => ({ status: 200, body: runtime.report() }),

    listAgentTools: () => ({ status: 200, body: { tools: runtime.toolSchemas() } }),

    // The same definitions in the shapes two LLM APIs take, for orchestrators that pass them on as is.
    listAgentToolsOpenAi: () => ({ status: 200, body: { tools: runtime.toolSchemas().map((t) => ({ type: 'function' as const, function: t })) } }),

    listAgentToolsAnthropic: () => ({
      status: 200,
      body: { tools: runtime.toolSchemas().map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })) },
    }),

    invokeAgentTool: async ({ path, body, principal }) => {
      const result = await runtime.invokeTool(path.name, body.arguments, { userDid: principal.did, roomId: body.roomId ?? DEFAULT_ROOM_ID });
      return { status: 200, body: { tool: path.name, result }, headers: { 'Cache-Control': 'no-store' } };
    },

    buildAgentContext: async ({ body, principal }) => ({
      status: 200,
      body: await runtime.buildContext({ userDid: principal.did, roomId: body?.roomId ?? DEFAULT_ROOM_ID }),
      headers: { 'Cache-Control': 'private, no-store' },
    }),
  } satisfies Handlers<OperationsTagged<'agent'>>;
}
