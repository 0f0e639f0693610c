// Test plugins and a logger whose lines the test can read.
import { pino, type Logger } from 'pino';
import type { PluginManifest } from '../../src/agent/runtime/manifest.ts';
import type { AgentPlugin, PluginInstance } from '../../src/agent/runtime/plugin.ts';

export function manifestOf(name: string, overrides: Partial<PluginManifest> = {}): PluginManifest {
  return {
    name,
    version: '1.0.0',
    title: `Plugin ${name}`,
    summary: `Test plugin ${name}.`,
    whenToUse: ['When testing.'],
    whenNotToUse: ['In production.'],
    examples: [],
    visibility: 'on-demand',
    stability: 'experimental',
    category: 'core',
    defaultState: 'on',
    dependsOn: [],
    requiredEnv: [],
    ...overrides,
  };
}

export function testPlugin(name: string, overrides: Partial<PluginManifest> = {}, instance: PluginInstance = {}, routePaths?: string[]): AgentPlugin {
  return { manifest: manifestOf(name, overrides), routePaths, create: () => instance };
}

export interface CapturedLog {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export function capturingLogger(): { logger: Logger; lines: CapturedLog[] } {
  const lines: CapturedLog[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { logger, lines };
}

export const WARN = 40;
