// The plugin manifest and its validation. A bad manifest is a programming error in a plugin,
// so it stops boot with a message naming the plugin and the field.
import { z } from 'zod';
import { ConfigError } from '../../config.ts';

const kebabName = z.string().regex(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/, 'must be kebab-case, e.g. user-preferences');
const text = (max: number) => z.string().trim().min(1, 'must not be empty').max(max);

export const pluginManifestSchema = z.strictObject({
  name: kebabName.max(64),
  version: z.string().regex(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/, 'must be a semantic version such as 1.0.0'),
  title: text(80),
  summary: text(500),
  whenToUse: z.array(text(500)),
  whenNotToUse: z.array(text(500)),
  examples: z.array(
    z.strictObject({
      user: text(500),
      tool: z.string().min(1),
      args: z.record(z.string(), z.unknown()),
    }),
  ),
  visibility: z.enum(['always', 'on-demand', 'silent']),
  stability: z.enum(['stable', 'beta', 'experimental']),
  category: kebabName.max(40),
  defaultState: z.enum(['on', 'off', 'auto']),
  dependsOn: z.array(kebabName),
  requiredEnv: z.array(z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be an environment variable name such as OPENAI_API_KEY')),
});

export type PluginManifest = z.infer<typeof pluginManifestSchema>;

/**
 * Thrown at boot for anything that must stop the runtime from starting. A ConfigError, so the
 * CLI prints the message alone and exits 1.
 */
export class AgentBootError extends ConfigError {
  override name = 'AgentBootError';
}

/** Validates one manifest; the error names the plugin and every bad field. */
export function validateManifest(manifest: unknown): PluginManifest {
  const result = pluginManifestSchema.safeParse(manifest);
  if (result.success) {
    const m = result.data;
    if (m.dependsOn.includes(m.name)) throw new AgentBootError(`Invalid manifest of plugin "${m.name}": dependsOn: a plugin cannot depend on itself`);
    return m;
  }
  const name = typeof (manifest as { name?: unknown })?.name === 'string' ? (manifest as { name: string }).name : '(unnamed)';
  const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(manifest)'}: ${i.message}`);
  throw new AgentBootError(`Invalid manifest of plugin "${name}":\n${lines.join('\n')}`);
}
