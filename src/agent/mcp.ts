// The agent runtime as an MCP server (Model Context Protocol, Streamable HTTP, official SDK) at
// /agent/mcp: the loaded plugins' tools (the same registry, argument validation and errors as
// POST /agent/tools/{name}/invoke) and each plugin's per-user state, such as the user's
// preferences, as resources hearth://state/{key}/{roomId}. Stateless: every POST carries one
// JSON-RPC message and gets its answer, so any instance behind a balancer can serve it.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema, ErrorCode, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ListToolsRequestSchema,
  McpError, ReadResourceRequestSchema, type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Router } from 'express';
import { principalOf } from '../platform/http/auth.ts';
import { DomainError } from '../platform/domain-errors.ts';
import { domainToAppError } from '../platform/http/errors.ts';
import { caseSensitiveRouter } from '../platform/http/scope.ts';
import { contractValidator } from '../platform/contract-validators.ts';
import { unstorableValue } from '../platform/http/input.ts';
import type { Principal } from '../platform/keys/service.ts';
import { DEFAULT_ROOM_ID } from './runtime/plugin.ts';
import type { AgentRuntime } from './runtime/runtime.ts';

export const MCP_PATH = '/agent/mcp';
const STATE_URI = /^hearth:\/\/state\/([A-Za-z0-9_-]+)\/([^/]+)$/;
const stateUri = (key: string, roomId: string) => `hearth://state/${key}/${encodeURIComponent(roomId)}`;

/** `value` as a room id, if it is one the HTTP routes would take (the contract's RoomId, storable text). */
function asRoomId(value: unknown): string | undefined {
  return contractValidator<string>('RoomId')(value) && !unstorableValue(value) ? value : undefined;
}

/** The room a resource URI names; undefined for a bad escape or no room id (asRoomId). */
function roomIdOf(escaped: string): string | undefined {
  try {
    return asRoomId(decodeURIComponent(escaped));
  } catch {
    return undefined;
  }
}

function mcpServer(runtime: AgentRuntime, principal: Principal, version: string): Server {
  const server = new Server({ name: 'hearth-agent', version }, { capabilities: { tools: {}, resources: {} } });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: runtime.toolSchemas().map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    if (!principal.scopes.includes('agent:write')) throw new McpError(ErrorCode.InvalidRequest, 'This API key lacks the scope agent:write.');
    // Tools act in the user's default room, as POST /agent/tools/{name}/invoke does without roomId,
    // or in the room _meta.roomId names, which must be one that route would take.
    const given = request.params._meta?.roomId;
    const roomId = given === undefined ? DEFAULT_ROOM_ID : asRoomId(given);
    if (roomId === undefined) throw new McpError(ErrorCode.InvalidParams, '_meta.roomId must be a room id: text of 1 to 255 characters.');
    try {
      const result = await runtime.invokeTool(request.params.name, request.params.arguments ?? {}, { userDid: principal.did, roomId });
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: { result } };
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not-found') throw new McpError(ErrorCode.InvalidParams, err.message);
      // Bad arguments are the model's to correct: a tool result marked as an error, naming the
      // fields as POST /agent/tools/{name}/invoke does (the arguments are its body's).
      if (err instanceof DomainError && err.kind === 'invalid') {
        const problem = domainToAppError(err);
        return { isError: true, content: [{ type: 'text', text: JSON.stringify({ detail: problem.detail, errors: problem.errors ?? [] }) }] };
      }
      throw err;
    }
  });

  const stateKeys = async (roomId: string) => Object.keys((await runtime.buildContext({ userDid: principal.did, roomId })).state);

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: (await stateKeys(DEFAULT_ROOM_ID)).map((key) => ({
      uri: stateUri(key, DEFAULT_ROOM_ID),
      name: `${key} (room ${DEFAULT_ROOM_ID})`,
      mimeType: 'application/json',
    })),
  }));

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: (await stateKeys(DEFAULT_ROOM_ID)).map((key) => ({
      uriTemplate: `hearth://state/${key}/{roomId}`,
      name: `${key} of the caller in a room`,
      mimeType: 'application/json',
    })),
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const m = STATE_URI.exec(request.params.uri);
    const roomId = m ? roomIdOf(m[2]!) : undefined;
    const state = roomId === undefined ? undefined : (await runtime.buildContext({ userDid: principal.did, roomId })).state;
    // Own keys only: `constructor` or `__proto__` name no resource.
    if (!state || !Object.hasOwn(state, m![1]!)) throw new McpError(ErrorCode.InvalidParams, `No resource ${request.params.uri}.`);
    return { contents: [{ uri: request.params.uri, mimeType: 'application/json', text: JSON.stringify(state[m![1]!]) }] };
  });

  return server;
}

export function mcpRouter(runtime: AgentRuntime, version: string): Router {
  const router = caseSensitiveRouter();
  router.post(MCP_PATH, async (req, res) => {
    const principal = principalOf(req);
    const server = mcpServer(runtime, principal, version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return router;
}
