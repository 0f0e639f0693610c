// The agent runtime: resolves the plugin set once at boot, creates the loaded plugins, and
// serves what an orchestrator needs per turn (tools, tool execution, hydrated state, prompt
// sections). An excluded plugin was never created: no tools, routes, state or prompt section.
import type { RequestHandler } from 'express';
import type { AgentContext, AgentPlugins, ExcludedPlugin, PromptSection, ToolDefinition as ToolSchema } from '../../../generated/openapi/types.gen.ts';
import { noRoute } from '../../platform/http/errors.ts';
import type { HandlerTable } from '../../platform/http/handlers.ts';
import { scopedRouter } from '../../platform/http/scope.ts';
import type { Logger } from '../../platform/logging.ts';
import { resolvePlugins, type FeaturesSource } from './features.ts';
import type { PluginManifest } from './manifest.ts';
import type { AgentPlugin, PluginDeps, PluginInstance, StateHydrator, TurnContext } from './plugin.ts';
import { ToolRegistry } from './tools.ts';

export interface AgentRuntimeOptions extends PluginDeps {
  plugins: readonly AgentPlugin[];
  features: FeaturesSource;
  /** Names of the set environment variables (from config), for requiredEnv. */
  envNames: readonly string[];
}

/** Routes match case-sensitively and with or without a trailing slash (caseSensitiveRouter); so does the guard. */
const routeKey = (path: string) => path.replace(/\/+$/, '') || '/';

interface ActivePlugin {
  manifest: PluginManifest;
  routePaths: string[];
  forced: boolean;
  instance: PluginInstance;
}

export class AgentRuntime {
  private readonly active: ActivePlugin[] = [];
  private readonly tools = new ToolRegistry();
  private readonly excluded: ExcludedPlugin[];
  private readonly unknownKeys: string[];
  private readonly logger: Logger;
  private readonly unloadedPaths: Set<string>;

  constructor(opts: AgentRuntimeOptions) {
    this.logger = opts.logger;
    const resolution = resolvePlugins(opts.plugins, opts.features, opts.envNames);
    this.excluded = resolution.excluded;
    this.unknownKeys = resolution.unknownKeys;
    if (this.unknownKeys.length) {
      this.logger.warn(
        { unknownKeys: this.unknownKeys, known: opts.plugins.map((p) => p.manifest.name) },
        `${opts.features.source} names unknown plugin(s) ${this.unknownKeys.join(', ')}; they are ignored`,
      );
    }
    for (const { plugin, forced } of resolution.loaded) {
      const instance = plugin.create({ db: opts.db, logger: opts.logger });
      this.tools.register(plugin, instance.tools ?? []);
      this.active.push({ manifest: plugin.manifest, routePaths: plugin.routePaths ?? [], forced, instance });
    }
    for (const e of this.excluded) this.logger.info({ plugin: e.name, reason: e.reason }, `agent plugin excluded: ${e.detail}`);
    this.logger.info({ plugins: this.active.map((p) => p.manifest.name) }, 'agent plugins loaded');

    const loadedNames = new Set(this.active.map((p) => p.manifest.name));
    this.unloadedPaths = new Set(
      opts.plugins.filter((p) => !loadedNames.has(p.manifest.name)).flatMap((p) => (p.routePaths ?? []).map(routeKey)),
    );
  }

  report(): AgentPlugins {
    return {
      loaded: this.active.map((p) => ({ manifest: p.manifest, tools: this.tools.namesOf(p.manifest.name), forced: p.forced })),
      excluded: this.excluded,
      unknownFeatureKeys: this.unknownKeys,
    };
  }

  toolSchemas(): ToolSchema[] {
    return this.tools.list();
  }

  invokeTool(name: string, args: unknown, ctx: TurnContext): Promise<unknown> {
    return this.tools.invoke(name, args, ctx);
  }

  /**
   * Build-time context for a turn: every loaded plugin's state, then its prompt section. A
   * plugin whose state cannot be read gets its fallback and no failure reaches the caller.
   */
  async buildContext(ctx: TurnContext): Promise<AgentContext & { state: Record<string, unknown> }> {
    const hydrators = this.hydrators();
    const values = await Promise.all(hydrators.map((h) => this.hydrate(h, ctx)));
    const state: Record<string, unknown> = {};
    hydrators.forEach((h, i) => {
      state[h.key] = values[i];
    });
    const promptSections: PromptSection[] = [];
    for (const p of this.active) {
      const section = p.instance.promptSection?.(state);
      if (section) promptSections.push({ plugin: p.manifest.name, ...section });
    }
    return { roomId: ctx.roomId, state, promptSections };
  }

  private hydrators(): StateHydrator[] {
    return this.active.map((p) => p.instance.state).filter((s): s is StateHydrator => s !== undefined);
  }

  /** The keys of the loaded plugins' state (each a resource over MCP). */
  stateKeys(): string[] {
    return this.hydrators().map((h) => h.key);
  }

  /**
   * One plugin's state read as it is, for a caller that asked for that state alone (an MCP
   * resource): a failure to read it reaches the caller, where buildContext's turn goes on with
   * the fallback. Undefined when no loaded plugin keeps state under `key`.
   */
  async readState(key: string, ctx: TurnContext): Promise<{ value: unknown } | undefined> {
    const hydrator = this.hydrators().find((h) => h.key === key);
    return hydrator && { value: await hydrator.load(ctx) };
  }

  private async hydrate(h: StateHydrator, ctx: TurnContext): Promise<unknown> {
    try {
      return await h.load(ctx);
    } catch (err) {
      this.logger.warn({ err, stateKey: h.key, roomId: ctx.roomId }, 'agent state could not be loaded; the turn goes on without it');
      return h.fallback;
    }
  }

  /** The loaded plugins' handlers of contract operations. */
  handlers(): HandlerTable {
    const handlers: HandlerTable = {};
    for (const p of this.active) Object.assign(handlers, p.instance.handlers);
    return handlers;
  }

  /** The loaded plugins' routers, each reached only on the paths its plugin declares (`routePaths`). */
  routers(): RequestHandler[] {
    return this.active.flatMap((p) => (p.instance.router ? [scopedRouter(p.instance.router, { paths: p.routePaths })] : []));
  }

  /**
   * Mounted before the OpenAPI validator: a route of a plugin that is not loaded does not
   * exist, so it answers 404 rather than the validator's 401 or 400 for a documented path.
   */
  unloadedRoutesGuard(): RequestHandler {
    return (req, _res, next) => {
      if (this.unloadedPaths.has(routeKey(req.path))) {
        next(noRoute(req, 'the plugin serving it is not loaded'));
        return;
      }
      next();
    };
  }
}
