// The agent runtime as an MCP server (Model Context Protocol, Streamable HTTP, official SDK) at
// /agent/mcp: the loaded plugins' tools (the same registry, argument validation and errors as
// POST /agent/tools/{name}/invoke) and each plugin's per-user state, such as the user's
// preferences, as resources hearth://state/{key}/{roomId}. Stateless: every POST carries one
// JSON-RPC message and gets its answer, so any instance behind a balancer can serve it. The edge
// here checks what the SDK's transport would answer less precisely: the Origin (DNS rebinding),
// the message's shape (-32600) and its params (-32602), and the scope tools/call needs (403).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema, ErrorCode, InitializeRequestSchema, isJSONRPCRequest, JSONRPCMessageSchema, ListResourcesRequestSchema,
  LATEST_PROTOCOL_VERSION, ListResourceTemplatesRequestSchema, ListToolsRequestSchema, PingRequestSchema, ReadResourceRequestSchema, SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import { isDatabaseUnavailable } from '../platform/db/index.ts';
import { assertScopes } from '../platform/http/auth.ts';
import { DomainError } from '../platform/domain-errors.ts';
import { domainToAppError, forbidden, NOT_JSON, renderProblem, type ErrorRenderer } from '../platform/http/errors.ts';
import { SENT, type Handler } from '../platform/http/handlers.ts';
import { contractValidator } from '../platform/contract-validators.ts';
import { unstorableValue } from '../platform/http/input.ts';
import type { PostAgentMcpData } from '../../generated/openapi/types.gen.ts';
import type { Principal } from '../platform/keys/service.ts';
import type { Logger } from '../platform/logging.ts';
import { DEFAULT_ROOM_ID } from './runtime/plugin.ts';
import type { AgentRuntime } from './runtime/runtime.ts';

export const MCP_PATH = '/agent/mcp';
const STATE_URI = /^hearth:\/\/state\/([A-Za-z0-9_-]+)\/([^/]+)$/;
const stateUri = (key: string, roomId: string) => `hearth://state/${key}/${encodeURIComponent(roomId)}`;

/**
 * A JSON-RPC error the SDK answers as it is: an McpError would put "MCP error <code>: " before
 * its message, which the SDK's client then prefixes again.
 */
class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/**
 * The MCP versions this server speaks: those without JSON-RPC batching, which it does not serve
 * (2025-06-18 removed it; 2025-03-26 and 2024-11-05 require it).
 */
const PROTOCOL_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS.filter((v) => v >= '2025-06-18');
/** MCP's code for a resources/read of a URI that names no resource (Resources, Error Handling). */
const RESOURCE_NOT_FOUND = -32002;
/** The SDK's code for an unsupported MCP-Protocol-Version header. */
const UNSUPPORTED_PROTOCOL_VERSION = -32000;

/** JSON-RPC's server-defined range (-32000 to -32099): the service cannot answer now; `data.retryAfterSeconds` says when to retry. */
const SERVICE_UNAVAILABLE = -32003;

/** What the MCP endpoint is built with. */
export interface McpOptions {
  /** Reported to clients in the initialize handshake. */
  version: string;
  /** Origins API_CORS_ORIGINS lists: browser pages there may call the endpoint. */
  corsOrigins: readonly string[];
  retryAfterSeconds: number;
  logger: Logger;
}

/**
 * A handler's failure as the JSON-RPC error a client reads: the database out of reach is worth a
 * retry, any other fault is "Internal error" (logged with its cause); no cause's text reaches the
 * client (a PostgreSQL message, a stack).
 */
function protocolFailure(err: unknown, { retryAfterSeconds, logger }: McpOptions): JsonRpcError {
  if (err instanceof JsonRpcError) return err;
  if (isDatabaseUnavailable(err)) return new JsonRpcError(SERVICE_UNAVAILABLE, 'The service is temporarily unavailable; retry later.', { retryAfterSeconds });
  logger.error({ err }, 'mcp request failed');
  return new JsonRpcError(ErrorCode.InternalError, 'Internal error');
}

/** The methods this server answers, by the SDK's schema of their request: their params are checked before the SDK runs them. */
const REQUEST_SCHEMAS = new Map<string, RequestSchema>(
  [InitializeRequestSchema, PingRequestSchema, ListToolsRequestSchema, CallToolRequestSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ReadResourceRequestSchema].map(
    (schema) => [schema.shape.method.value, schema],
  ),
);

type SchemaIssue = { path: readonly PropertyKey[]; message: string };
interface RequestSchema {
  safeParse(value: unknown): { success: true } | { success: false; error: { issues: readonly SchemaIssue[] } };
}

/** What is wrong with a message's params, in the message's own terms (`params.arguments: ...`). */
function paramsIssues(issues: readonly SchemaIssue[]): string {
  return issues.map((i) => `${i.path.map(String).join('.') || 'message'}: ${i.message}`).join('; ');
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Whether a browser page at `origin` may call the endpoint (MCP Streamable HTTP: a server MUST
 * refuse an Origin it does not accept, against DNS rebinding). API_CORS_ORIGINS lists them; the
 * server's own pages on a loopback address are its own origin (a rebound page names its own host,
 * never a loopback one).
 */
function originAccepted(origin: string, req: Request, listed: readonly string[]): boolean {
  if (listed.includes('*') || listed.includes(origin)) return true;
  try {
    const url = new URL(origin);
    // Exactly as a browser sends its own origin: this scheme, a loopback host, the Host asked for.
    return url.origin === origin && url.protocol === `${req.protocol}:` && LOOPBACK_HOSTS.has(url.hostname) && url.host === req.headers.host?.toLowerCase();
  } catch {
    return false;
  }
}

/**
 * The area's renderer for POST /agent/mcp: a request refused before any JSON-RPC message could
 * be read (400: the body is not JSON, not one object, not storable, not UTF-8, a name twice; 413
 * too large; 415 not JSON or not UTF-8) is the JSON-RPC error a client of the protocol reads,
 * with `id` null (JSON-RPC 2.0 §5.1: -32700 Parse error for JSON that does not parse, else -32600
 * Invalid Request), its HTTP status and the reason in its message. The refusals of who calls
 * (401, 403) stay problems, with their challenges, as MCP's authorization has them.
 */
export function mcpErrorRendererFor(req: Request): ErrorRenderer | undefined {
  return req.method === 'POST' && req.path === MCP_PATH ? renderMcpError : undefined;
}

/** The statuses of a request refused before its JSON-RPC message could be read. */
const UNREAD_MESSAGE_STATUSES = new Set([400, 413, 415]);

const renderMcpError: ErrorRenderer = (err, req, res, headers) => {
  if (!UNREAD_MESSAGE_STATUSES.has(err.status)) return renderProblem(err, req, res, headers);
  const parse = err.type === 'malformed-body' && err.detail === NOT_JSON;
  res.set(headers);
  res.status(err.status).json({
    jsonrpc: '2.0',
    id: null,
    error: { code: parse ? ErrorCode.ParseError : ErrorCode.InvalidRequest, message: `${parse ? 'Parse error' : 'Invalid Request'}: ${err.detail ?? err.title}`, ...(err.errors ? { data: { errors: err.errors } } : {}) },
  });
};

/** A JSON-RPC error as the answer of one POST (`id` null when the message's id cannot be told). */
function sendJsonRpcError(res: Response, status: number, id: string | number | null, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', id, error: { code, message } });
}

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

function mcpServer(runtime: AgentRuntime, principal: Principal, opts: McpOptions): Server {
  const server = new Server({ name: 'hearth-agent', version: opts.version }, { capabilities: { tools: {}, resources: {} } });
  /** A handler's work, its failures answered as protocolFailure says. */
  const answering = <R>(work: () => Promise<R>): Promise<R> =>
    work().catch((err: unknown) => {
      throw protocolFailure(err, opts);
    });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: runtime.toolSchemas().map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
  }));

  server.setRequestHandler(CallToolRequestSchema, (request) => answering(async (): Promise<CallToolResult> => {
    // Tools act in the user's default room, as POST /agent/tools/{name}/invoke does without roomId,
    // or in the room _meta.roomId names, which must be one that route would take.
    const given = request.params._meta?.roomId;
    const roomId = given === undefined ? DEFAULT_ROOM_ID : asRoomId(given);
    if (roomId === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, '_meta.roomId must be a room id: text of 1 to 255 characters.');
    try {
      const result = await runtime.invokeTool(request.params.name, request.params.arguments ?? {}, { userDid: principal.did, roomId });
      // The text block is the structured content serialized, for clients that read only text.
      const structuredContent = { result };
      return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not-found') throw new JsonRpcError(ErrorCode.InvalidParams, err.message);
      // Bad arguments are the model's to correct: a tool result marked as an error, naming the
      // fields as POST /agent/tools/{name}/invoke does, by pointers into the call's params.
      if (err instanceof DomainError && err.kind === 'invalid') {
        const problem = domainToAppError(err);
        const intoParams = (pointer: string) => pointer.replace(/^\/body(?=\/|$)/, '');
        const errors = (problem.errors ?? []).map((e) => ({ ...e, pointer: intoParams(e.pointer) }));
        const detail = problem.detail?.replaceAll('/body/arguments', '/arguments');
        return { isError: true, content: [{ type: 'text', text: JSON.stringify({ detail, errors }) }] };
      }
      throw err;
    }
  }));

  server.setRequestHandler(ListResourcesRequestSchema, () =>
    answering(async () => ({
      resources: runtime.stateKeys().map((key) => ({
        uri: stateUri(key, DEFAULT_ROOM_ID),
        name: `${key} (room ${DEFAULT_ROOM_ID})`,
        mimeType: 'application/json',
      })),
    })),
  );

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () =>
    answering(async () => ({
      resourceTemplates: runtime.stateKeys().map((key) => ({
        uriTemplate: `hearth://state/${key}/{roomId}`,
        name: `${key} of the caller in a room`,
        mimeType: 'application/json',
      })),
    })),
  );

  server.setRequestHandler(ReadResourceRequestSchema, (request) => answering(async () => {
    const m = STATE_URI.exec(request.params.uri);
    const roomId = m ? roomIdOf(m[2]!) : undefined;
    // Read as it is: an outage is the caller's to hear (-32003), not "no preferences".
    const state = roomId === undefined ? undefined : await runtime.readState(m![1]!, { userDid: principal.did, roomId });
    if (!state) throw new JsonRpcError(RESOURCE_NOT_FOUND, `No resource ${request.params.uri}.`, { uri: request.params.uri });
    return { contents: [{ uri: request.params.uri, mimeType: 'application/json', text: JSON.stringify(state.value) }] };
  }));

  return server;
}

type McpBody = PostAgentMcpData['body'];

/**
 * The checks before the SDK sees a message: the message to hand it when it may go on, else
 * undefined with the answer sent, or thrown (403 problems for the Origin and the scope).
 */
function admitMessage(body: McpBody, req: Request, res: Response, principal: Principal, corsOrigins: readonly string[]): McpBody | undefined {
  const origin = req.headers.origin;
  if (origin !== undefined && !originAccepted(origin, req, corsOrigins)) {
    throw forbidden(`Pages at ${origin} may not call the MCP endpoint: list the origin in API_CORS_ORIGINS.`);
  }
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !PROTOCOL_VERSIONS.includes(version)) {
    sendJsonRpcError(res, 400, null, UNSUPPORTED_PROTOCOL_VERSION, `Bad Request: Unsupported protocol version (supported versions: ${PROTOCOL_VERSIONS.join(', ')})`);
    return undefined;
  }
  const message = JSONRPCMessageSchema.safeParse(body);
  if (!message.success) {
    sendJsonRpcError(res, 400, null, ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 request, notification or response.');
    return undefined;
  }
  if (!isJSONRPCRequest(message.data)) return body;
  const { id, method } = message.data;
  const checked = REQUEST_SCHEMAS.get(method)?.safeParse(message.data);
  if (checked && !checked.success) {
    sendJsonRpcError(res, 200, id, ErrorCode.InvalidParams, `Invalid params: ${paramsIssues(checked.error.issues)}`);
    return undefined;
  }
  if (method === 'tools/call') assertScopes(principal, ['agent:write']);
  // A client asking for an older version is offered the latest (MCP lifecycle: the server answers
  // with a version it supports); the SDK would agree to 2025-03-26, which requires batches.
  if (method === 'initialize' && !PROTOCOL_VERSIONS.includes(String(message.data.params?.protocolVersion))) {
    return { ...body, params: { ...message.data.params, protocolVersion: LATEST_PROTOCOL_VERSION } };
  }
  return body;
}

export function mcpHandler(runtime: AgentRuntime, opts: McpOptions): Handler<'postAgentMcp'> {
  return async ({ principal, body, req, res }) => {
    const admitted = admitMessage(body, req, res, principal, opts.corsOrigins);
    if (!admitted) return SENT;
    const server = mcpServer(runtime, principal, opts);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, admitted);
    return SENT;
  };
}
