// The plugin manifest and its validation against the contract's PluginManifest schema. A bad
// manifest is a programming error in a plugin, so it stops boot with a message naming the
// plugin and every bad field.
import type { PluginManifest } from '../../../generated/openapi/types.gen.ts';
import { ConfigError } from '../../config.ts';
import { contractValidator } from '../../platform/contract-validators.ts';
import { schemaIssues } from '../../platform/schema-issues.ts';

export type { PluginManifest };

const validate = contractValidator<PluginManifest>('PluginManifest');

/**
 * Thrown at boot for anything that must stop the runtime from starting. A ConfigError, so the
 * CLI prints the message alone and exits 1.
 */
export class AgentBootError extends ConfigError {
  override name = 'AgentBootError';
}

/** Validates one manifest; the error names the plugin and every bad field. */
export function validateManifest(manifest: unknown): PluginManifest {
  if (validate(manifest)) {
    if (manifest.dependsOn.includes(manifest.name)) throw new AgentBootError(`Invalid manifest of plugin "${manifest.name}": dependsOn: a plugin cannot depend on itself`);
    return manifest;
  }
  const name = typeof (manifest as { name?: unknown })?.name === 'string' ? (manifest as { name: string }).name : '(unnamed)';
  const lines = schemaIssues(validate.errors, manifest).map((i) => `  ${i.path.join('.') || '(manifest)'}: ${i.message}`);
  throw new AgentBootError(`Invalid manifest of plugin "${name}":\n${lines.join('\n')}`);
}
