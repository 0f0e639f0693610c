// The orchestrator's HTTP surface of the runtime (/agent/...). Thin: the runtime does the work.
import type { Router } from 'express';
import type {
  AgentContext,
  AgentPlugins,
  AgentTools,
  AnthropicTools,
  OpenAiTools,
  InvokeAgentToolData,
  BuildAgentContextData,
  ToolResult,
} from '../../generated/openapi/types.gen.ts';
import { principalOf } from '../platform/http/auth.ts';
import { DEFAULT_ROOM_ID } from './runtime/plugin.ts';
import type { AgentRuntime } from './runtime/runtime.ts';
import { caseSensitiveRouter } from '../platform/http/scope.ts';

export function agentRouter(runtime: AgentRuntime): Router {
  const router = caseSensitiveRouter();

  router.get('/agent/plugins', (_req, res) => {
    const body: AgentPlugins = runtime.report();
    res.json(body);
  });

  router.get('/agent/tools', (_req, res) => {
    const body: AgentTools = { tools: runtime.toolSchemas() };
    res.json(body);
  });

  // The same definitions in the shapes two LLM APIs take, for orchestrators that pass them on as is.
  router.get('/agent/tools/openai', (_req, res) => {
    const body: OpenAiTools = { tools: runtime.toolSchemas().map((t) => ({ type: 'function', function: t })) };
    res.json(body);
  });

  router.get('/agent/tools/anthropic', (_req, res) => {
    const body: AnthropicTools = {
      tools: runtime.toolSchemas().map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })),
    };
    res.json(body);
  });

  router.post('/agent/tools/:name/invoke', async (req, res) => {
    const { name } = req.params;
    const input = req.body as InvokeAgentToolData['body'];
    const result = await runtime.invokeTool(name, input.arguments, { userDid: principalOf(req).did, roomId: input.roomId ?? DEFAULT_ROOM_ID });
    const body: ToolResult = { tool: name, result };
    res.set('Cache-Control', 'no-store').json(body);
  });

  router.post('/agent/context', async (req, res) => {
    const input = (req.body ?? {}) as NonNullable<BuildAgentContextData['body']>;
    const body: AgentContext = await runtime.buildContext({ userDid: principalOf(req).did, roomId: input.roomId ?? DEFAULT_ROOM_ID });
    res.set('Cache-Control', 'private, no-store').json(body);
  });

  return router;
}
