// Which plugins load: the features map against the manifests. `false` never loads a plugin,
// `true` forces it (and a forced plugin that cannot load stops boot), an absent key follows the
// manifest's defaultState. Dependencies come first; a plugin whose dependency is excluded is
// excluded too, with the reason.
import { readFileSync } from 'node:fs';
import type { ExcludedPlugin } from '../../../generated/openapi/types.gen.ts';
import { ConfigError, featuresMapSchema, invalidConfig, type Config } from '../../config.ts';
import { AgentBootError, validateManifest } from './manifest.ts';
import type { AgentPlugin } from './plugin.ts';

export type FeaturesMap = Record<string, boolean>;

export interface FeaturesSource {
  features: FeaturesMap;
  /** Where the map came from, for messages: the variable (and file) name. */
  source: string;
}

export type ExclusionReason = ExcludedPlugin['reason'];

export interface LoadedPlugin {
  plugin: AgentPlugin;
  forced: boolean;
}

export interface PluginResolution {
  /** In dependency order: every plugin after the plugins it depends on. */
  loaded: LoadedPlugin[];
  excluded: ExcludedPlugin[];
  /** Feature keys naming no plugin: ignored, and warned about at boot. */
  unknownKeys: string[];
}

/** The features map from AGENT_FEATURES_FILE when set (it wins), else from AGENT_FEATURES. */
export function loadFeaturesMap(config: Pick<Config, 'AGENT_FEATURES' | 'AGENT_FEATURES_FILE'>): FeaturesSource {
  const file = config.AGENT_FEATURES_FILE;
  if (!file) return { features: config.AGENT_FEATURES, source: 'AGENT_FEATURES' };
  const source = `AGENT_FEATURES_FILE (${file})`;
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalidConfig(source, `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw invalidConfig(source, 'is not valid JSON');
  }
  const parsed = featuresMapSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${source}: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return { features: parsed.data, source };
}

/** Validates the catalog (manifests, unique names, known dependencies, no cycles) and orders it. */
export function orderByDependencies(plugins: readonly AgentPlugin[]): AgentPlugin[] {
  const byName = new Map<string, AgentPlugin>();
  for (const plugin of plugins) {
    const manifest = validateManifest(plugin.manifest);
    if (byName.has(manifest.name)) throw new AgentBootError(`Two plugins are named "${manifest.name}"; plugin names must be unique`);
    byName.set(manifest.name, plugin);
  }
  for (const plugin of plugins) {
    for (const dep of plugin.manifest.dependsOn) {
      if (!byName.has(dep)) throw new AgentBootError(`Plugin "${plugin.manifest.name}" depends on "${dep}", which is not a known plugin`);
    }
  }
  // Depth-first, in declaration order, so the order is stable and a cycle is reported by path.
  const ordered: AgentPlugin[] = [];
  const done = new Set<string>();
  const visit = (plugin: AgentPlugin, path: string[]) => {
    const name = plugin.manifest.name;
    if (done.has(name)) return;
    if (path.includes(name)) throw new AgentBootError(`Plugin dependency cycle: ${[...path.slice(path.indexOf(name)), name].join(' -> ')}`);
    for (const dep of plugin.manifest.dependsOn) visit(byName.get(dep)!, [...path, name]);
    done.add(name);
    ordered.push(plugin);
  };
  for (const plugin of plugins) visit(plugin, []);
  return ordered;
}

export function resolvePlugins(
  plugins: readonly AgentPlugin[],
  { features, source }: FeaturesSource,
  envNames: readonly string[],
): PluginResolution {
  const ordered = orderByDependencies(plugins);
  const env = new Set(envNames);
  const excludedByName = new Map<string, ExcludedPlugin>();
  const loaded: LoadedPlugin[] = [];
  const exclude = (name: string, reason: ExclusionReason, detail: string) => excludedByName.set(name, { name, reason, detail });

  for (const plugin of ordered) {
    const { name, requiredEnv, dependsOn, defaultState } = plugin.manifest;
    const flag = features[name];
    if (flag === false) {
      exclude(name, 'disabled-by-features', `${source} sets "${name}" to false`);
      continue;
    }
    const missingEnv = requiredEnv.filter((v) => !env.has(v));
    const excludedDep = dependsOn.map((d) => excludedByName.get(d)).find((d) => d !== undefined);
    if (flag === true) {
      if (missingEnv.length) {
        throw new AgentBootError(
          `${source} forces plugin "${name}" on, but its required environment variable(s) ${missingEnv.join(', ')} are not set`,
        );
      }
      if (excludedDep) {
        throw new AgentBootError(
          `${source} forces plugin "${name}" on, but it depends on "${excludedDep.name}", which is excluded (${excludedDep.detail})`,
        );
      }
      loaded.push({ plugin, forced: true });
      continue;
    }
    if (defaultState === 'off') {
      exclude(name, 'default-off', `"${name}" is off by default; set it to true in ${source} to load it`);
    } else if (excludedDep) {
      exclude(name, 'dependency-excluded', `depends on "${excludedDep.name}", which is excluded (${excludedDep.detail})`);
    } else if (missingEnv.length) {
      exclude(name, 'missing-env', `required environment variable(s) ${missingEnv.join(', ')} not set`);
    } else {
      loaded.push({ plugin, forced: false });
    }
  }
  const names = new Set(ordered.map((p) => p.manifest.name));
  return {
    loaded,
    excluded: ordered.map((p) => excludedByName.get(p.manifest.name)).filter((e) => e !== undefined),
    unknownKeys: Object.keys(features).filter((k) => !names.has(k)),
  };
}
