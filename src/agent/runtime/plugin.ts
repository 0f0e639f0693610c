// What a plugin declares and what the runtime asks of it. A plugin is code plus a manifest; the
// runtime decides from the manifest and the features map whether it loads, and only a loaded
// plugin's tools, routes, state and prompt section exist.
import type { Router } from 'express';
import type { HandlerTable } from '../../platform/http/handlers.ts';
import type { PromptSection } from '../../../generated/openapi/types.gen.ts';
import type { Db } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/logging.ts';
import type { PluginManifest } from './manifest.ts';

/** Who a tool runs for and where: the caller's DID and the orchestrator's room. */
export interface TurnContext {
  userDid: string;
  roomId: string;
}

/** A JSON Schema object schema for a tool's arguments, in the form LLM APIs take. */
export type JsonSchemaObject = Record<string, unknown> & { type: 'object' };

export interface ToolDefinition {
  /** Function name as LLM APIs accept it: letters, digits, _ and -, at most 64. */
  name: string;
  /** What the model reads to decide when to call the tool (and when not). */
  description: string;
  parameters: JsonSchemaObject;
  /** Runs with arguments already validated against `parameters`. */
  run(args: Record<string, unknown>, ctx: TurnContext): Promise<unknown>;
}

/** A piece of agent state loaded before the agent is built for a turn. */
export interface StateHydrator {
  /** The key under `state`, e.g. userPreferences. */
  key: string;
  load(ctx: TurnContext): Promise<unknown>;
  /** The value used when loading fails; a read failure never fails the turn. */
  fallback: unknown;
}

/** A prompt section as a plugin renders it; the runtime adds the plugin's name. */
export type PromptSectionContent = Omit<PromptSection, 'plugin'>;

/** What a loaded plugin contributes; every part is optional. */
export interface PluginInstance {
  tools?: ToolDefinition[];
  /** Handlers of the contract operations it serves; their paths must be declared in the plugin's `routePaths`. */
  handlers?: HandlerTable;
  /** HTTP routes outside handlers; their paths must be declared in the plugin's `routePaths`. */
  router?: Router;
  state?: StateHydrator;
  /** Renders the plugin's system-prompt section from the hydrated state; none when empty. */
  promptSection?(state: Readonly<Record<string, unknown>>): PromptSectionContent | undefined;
}

export interface PluginDeps {
  db: Db;
  logger: Logger;
}

export interface AgentPlugin {
  manifest: PluginManifest;
  /**
   * Exact paths the plugin's router serves. The runtime answers 404 for them when
   * the plugin is not loaded, before the OpenAPI validator can answer for a route that does
   * not exist.
   */
  routePaths?: string[];
  create(deps: PluginDeps): PluginInstance;
}

/** The room meant when a caller names none: the user's default room. */
export const DEFAULT_ROOM_ID = 'default';
