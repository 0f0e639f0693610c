import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express, { Router } from 'express';
import request from 'supertest';
import { expect } from 'chai';
import { configWith, ConfigError } from '../../src/config.ts';
import { toAppError } from '../../src/platform/http/errors.ts';
import { loadFeaturesMap, orderByDependencies, resolvePlugins } from '../../src/agent/runtime/features.ts';
import { AgentBootError, validateManifest } from '../../src/agent/runtime/manifest.ts';
import type { ToolDefinition } from '../../src/agent/runtime/plugin.ts';
import { AgentRuntime } from '../../src/agent/runtime/runtime.ts';
import { userPreferencesPlugin } from '../../src/agent/plugins/user-preferences/index.ts';
import { capturingLogger, manifestOf, testPlugin, WARN } from './helpers.ts';

const names = (r: ReturnType<typeof resolvePlugins>) => r.loaded.map((l) => l.plugin.manifest.name);
const fromEnv = (features: Record<string, boolean> = {}) => ({ features, source: 'AGENT_FEATURES' });
const noDb = {} as never;

function throws(fn: () => unknown, re: RegExp, type: new (...a: any[]) => Error = AgentBootError): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err, 'expected an error').to.be.instanceOf(type);
  expect((err as Error).message).to.match(re);
}

describe('agent runtime: manifests', () => {
  it('accepts the user-preferences manifest with the spec attributes', () => {
    const m = validateManifest(userPreferencesPlugin.manifest);
    expect(m).to.include({ name: 'user-preferences', visibility: 'always', stability: 'stable', category: 'core', defaultState: 'on' });
    expect(m.dependsOn).to.deep.equal([]);
    expect(m.requiredEnv).to.deep.equal([]);
  });

  it('rejects a bad manifest naming the plugin and every bad field', () => {
    throws(
      () => validateManifest({ ...manifestOf('Bad_Name'), version: 'one', visibility: 'sometimes', title: '' }),
      /Invalid manifest of plugin "Bad_Name":[\s\S]*name: must be kebab-case[\s\S]*version: must be a semantic version[\s\S]*title: must not be empty[\s\S]*visibility/,
    );
  });

  it('rejects missing and unknown fields, bad env names and self-dependency', () => {
    const { whenToUse: _omit, ...withoutWhenToUse } = manifestOf('a');
    throws(() => validateManifest(withoutWhenToUse), /whenToUse/);
    throws(() => validateManifest({ ...manifestOf('a'), colour: 'red' }), /colour/);
    throws(() => validateManifest(manifestOf('a', { requiredEnv: ['openai-key'] })), /requiredEnv\.0: must be an environment variable name/);
    throws(() => validateManifest(manifestOf('a', { dependsOn: ['a'] })), /cannot depend on itself/);
    throws(() => validateManifest(manifestOf('a', { defaultState: 'maybe' as never })), /defaultState/);
    throws(() => validateManifest(manifestOf('a', { examples: [{ user: 'hi', tool: 't' } as never] })), /examples\.0\.args/);
  });

  it('stops boot on a bad manifest, duplicate names, unknown dependencies and cycles', () => {
    const { logger } = capturingLogger();
    throws(() => new AgentRuntime({ plugins: [testPlugin('a', { stability: 'alpha' as never })], features: fromEnv(), envNames: [], db: noDb, logger }), /plugin "a"[\s\S]*stability/);
    throws(() => orderByDependencies([testPlugin('a'), testPlugin('a')]), /Two plugins are named "a"/);
    throws(() => orderByDependencies([testPlugin('a', { dependsOn: ['ghost'] })]), /"a" depends on "ghost", which is not a known plugin/);
    throws(
      () => orderByDependencies([testPlugin('a', { dependsOn: ['b'] }), testPlugin('b', { dependsOn: ['c'] }), testPlugin('c', { dependsOn: ['a'] })]),
      /cycle: a -> b -> c -> a/,
    );
  });
});

describe('agent runtime: features map', () => {
  it('absent key follows defaultState: on and auto load, off does not', () => {
    const r = resolvePlugins([testPlugin('on-one'), testPlugin('auto-one', { defaultState: 'auto' }), testPlugin('off-one', { defaultState: 'off' })], fromEnv(), []);
    expect(names(r)).to.deep.equal(['on-one', 'auto-one']);
    expect(r.loaded.every((l) => !l.forced)).to.equal(true);
    expect(r.excluded).to.deep.equal([{ name: 'off-one', reason: 'default-off', detail: '"off-one" is off by default; set it to true in AGENT_FEATURES to load it' }]);
  });

  it('false never loads, even a plugin that is on by default', () => {
    const r = resolvePlugins([testPlugin('user-preferences')], fromEnv({ 'user-preferences': false }), []);
    expect(names(r)).to.deep.equal([]);
    expect(r.excluded).to.deep.equal([{ name: 'user-preferences', reason: 'disabled-by-features', detail: 'AGENT_FEATURES sets "user-preferences" to false' }]);
  });

  it('true forces a plugin that is off by default', () => {
    const r = resolvePlugins([testPlugin('extra', { defaultState: 'off' })], fromEnv({ extra: true }), []);
    expect(r.loaded.map((l) => [l.plugin.manifest.name, l.forced])).to.deep.equal([['extra', true]]);
  });

  it('true with the required env set loads; without it boot fails naming the variables', () => {
    const plugin = testPlugin('llm-memory', { requiredEnv: ['MEMORY_URL', 'MEMORY_TOKEN'] });
    expect(names(resolvePlugins([plugin], fromEnv({ 'llm-memory': true }), ['MEMORY_URL', 'MEMORY_TOKEN', 'PATH']))).to.deep.equal(['llm-memory']);
    throws(
      () => resolvePlugins([plugin], fromEnv({ 'llm-memory': true }), ['MEMORY_URL']),
      /^AGENT_FEATURES forces plugin "llm-memory" on, but its required environment variable\(s\) MEMORY_TOKEN are not set$/,
    );
  });

  it('absent key with missing required env excludes the plugin with the reason (no boot failure)', () => {
    const r = resolvePlugins([testPlugin('search', { defaultState: 'auto', requiredEnv: ['SEARCH_KEY'] })], fromEnv(), []);
    expect(r.loaded).to.deep.equal([]);
    expect(r.excluded).to.deep.equal([{ name: 'search', reason: 'missing-env', detail: 'required environment variable(s) SEARCH_KEY not set' }]);
  });

  it('reads the required env from the config (names of set variables only)', () => {
    const config = configWith({ SEARCH_KEY: 'secret' });
    expect(config.agentEnvNames).to.include('SEARCH_KEY');
    expect(JSON.stringify(config)).not.to.include('secret');
    expect(configWith({ SEARCH_KEY: '' }).agentEnvNames).not.to.include('SEARCH_KEY');
  });

  it('loads dependencies first, whatever the declaration order', () => {
    const r = resolvePlugins(
      [testPlugin('c', { dependsOn: ['b', 'a'] }), testPlugin('b', { dependsOn: ['a'] }), testPlugin('a'), testPlugin('d')],
      fromEnv(),
      [],
    );
    expect(names(r)).to.deep.equal(['a', 'b', 'c', 'd']);
  });

  it('cascades exclusion to dependents, with the reason chain', () => {
    const r = resolvePlugins(
      [testPlugin('base'), testPlugin('mid', { dependsOn: ['base'] }), testPlugin('top', { dependsOn: ['mid'] }), testPlugin('other')],
      fromEnv({ base: false }),
      [],
    );
    expect(names(r)).to.deep.equal(['other']);
    expect(r.excluded).to.deep.equal([
      { name: 'base', reason: 'disabled-by-features', detail: 'AGENT_FEATURES sets "base" to false' },
      { name: 'mid', reason: 'dependency-excluded', detail: 'depends on "base", which is excluded (AGENT_FEATURES sets "base" to false)' },
      {
        name: 'top',
        reason: 'dependency-excluded',
        detail: 'depends on "mid", which is excluded (depends on "base", which is excluded (AGENT_FEATURES sets "base" to false))',
      },
    ]);
  });

  it('a forced plugin whose dependency is excluded stops boot', () => {
    throws(
      () => resolvePlugins([testPlugin('base'), testPlugin('top', { dependsOn: ['base'] })], fromEnv({ base: false, top: true }), []),
      /forces plugin "top" on, but it depends on "base", which is excluded \(AGENT_FEATURES sets "base" to false\)/,
    );
  });

  it('warns at boot about unknown keys and lists them in the report', () => {
    const { logger, lines } = capturingLogger();
    const runtime = new AgentRuntime({ plugins: [userPreferencesPlugin], features: fromEnv({ 'user-preference': false }), envNames: [], db: noDb, logger });
    const warning = lines.find((l) => l.level === WARN);
    expect(warning?.msg).to.equal('AGENT_FEATURES names unknown plugin(s) user-preference; they are ignored');
    expect(warning?.known).to.deep.equal(['user-preferences']);
    expect(runtime.report().unknownFeatureKeys).to.deep.equal(['user-preference']);
    expect(runtime.report().loaded.map((p) => p.manifest.name)).to.include('user-preferences');
  });

  it('logs no warning when every key is known', () => {
    const { logger, lines } = capturingLogger();
    new AgentRuntime({ plugins: [userPreferencesPlugin], features: fromEnv({ 'user-preferences': true }), envNames: [], db: noDb, logger });
    expect(lines.filter((l) => l.level >= WARN)).to.deep.equal([]);
  });
});

describe('agent runtime: features configuration', () => {
  it('parses AGENT_FEATURES as a JSON map of booleans', () => {
    expect(configWith({ AGENT_FEATURES: '{"user-preferences": false}' }).AGENT_FEATURES).to.deep.equal({ 'user-preferences': false });
    expect(configWith().AGENT_FEATURES).to.deep.equal({});
  });

  it('rejects bad AGENT_FEATURES with a message naming the variable', () => {
    throws(() => configWith({ AGENT_FEATURES: '{user-preferences: false}' }), /AGENT_FEATURES: must be a JSON object/, ConfigError);
    throws(() => configWith({ AGENT_FEATURES: '{"user-preferences": "no"}' }), /AGENT_FEATURES\.user-preferences: must be true or false/, ConfigError);
    throws(() => configWith({ AGENT_FEATURES: '[true]' }), /AGENT_FEATURES/, ConfigError);
  });

  it('AGENT_FEATURES_FILE wins over AGENT_FEATURES and is validated naming the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-features-'));
    const file = join(dir, 'features.json');
    writeFileSync(file, '{"user-preferences": false}');
    expect(loadFeaturesMap(configWith({ AGENT_FEATURES: '{"user-preferences": true}', AGENT_FEATURES_FILE: file }))).to.deep.equal({
      features: { 'user-preferences': false },
      source: `AGENT_FEATURES_FILE (${file})`,
    });
    writeFileSync(file, '{"user-preferences": 0}');
    throws(() => loadFeaturesMap(configWith({ AGENT_FEATURES_FILE: file })), /AGENT_FEATURES_FILE \(.*\): user-preferences: must be true or false/, ConfigError);
    writeFileSync(file, 'not json');
    throws(() => loadFeaturesMap(configWith({ AGENT_FEATURES_FILE: file })), /AGENT_FEATURES_FILE \(.*\): is not valid JSON/, ConfigError);
    throws(() => loadFeaturesMap(configWith({ AGENT_FEATURES_FILE: join(dir, 'missing.json') })), /AGENT_FEATURES_FILE \(.*\): cannot be read \(ENOENT\)/, ConfigError);
  });
});

describe('agent runtime: tools', () => {
  const echo = (over: Partial<ToolDefinition> = {}): ToolDefinition => ({
    name: 'echo',
    description: 'Echoes its text.',
    parameters: { type: 'object', additionalProperties: false, required: ['text'], properties: { text: { type: 'string', maxLength: 5 } } },
    run: async (args) => args,
    ...over,
  });
  const runtimeWith = (tools: ToolDefinition[], manifest = {}) => {
    const { logger } = capturingLogger();
    return new AgentRuntime({ plugins: [testPlugin('echoer', manifest, { tools })], features: fromEnv(), envNames: [], db: noDb, logger });
  };

  it('lists JSON Schema function definitions (name, description, parameters only)', () => {
    expect(runtimeWith([echo()]).toolSchemas()).to.deep.equal([
      { name: 'echo', description: 'Echoes its text.', parameters: echo().parameters },
    ]);
  });

  it('validates arguments before the tool runs: 400 naming the field, tool never called', async () => {
    let calls = 0;
    const runtime = runtimeWith([echo({ run: async (a) => (calls++, a) })]);
    const ctx = { userDid: 'did:ixo:entity:a', roomId: 'r' };
    const cases: [unknown, string, string][] = [
      [{ text: 'too long' }, '/body/arguments/text', 'maxLength'],
      [{}, '/body/arguments/text', 'required'],
      [{ text: 'ok', extra: 1 }, '/body/arguments/extra', 'additionalProperties'],
      [{ text: 5 }, '/body/arguments/text', 'type'],
    ];
    for (const [args, pointer, rule] of cases) {
      let err: any;
      try {
        await runtime.invokeTool('echo', args, ctx);
      } catch (e) {
        err = e;
      }
      const problem = toAppError(err);
      expect(problem.status).to.equal(400);
      expect(problem.errors).to.deep.include({ pointer, message: problem.errors!.find((x) => x.pointer === pointer)!.message, rule });
    }
    expect(calls).to.equal(0);
    expect(await runtime.invokeTool('echo', { text: 'hi' }, ctx)).to.deep.equal({ text: 'hi' });
    expect(calls).to.equal(1);
  });

  it('answers 404 for an unknown tool', async () => {
    let err: any;
    try {
      await runtimeWith([echo()]).invokeTool('nope', {}, { userDid: 'did:ixo:entity:a', roomId: 'r' });
    } catch (e) {
      err = e;
    }
    expect(toAppError(err).status).to.equal(404);
  });

  it('stops boot on bad tool definitions and on manifest examples that do not fit the tool', () => {
    throws(() => runtimeWith([echo({ name: 'echo tool' })]), /tool name "echo tool" must match/);
    throws(() => runtimeWith([echo(), echo()]), /tool "echo" is already defined by plugin "echoer"/);
    throws(() => runtimeWith([echo({ description: ' ' })]), /tool "echo" needs a description/);
    throws(() => runtimeWith([echo({ parameters: { type: 'object', properties: { text: { type: 'strng' } } } as never })]), /not a valid JSON Schema/);
    throws(() => runtimeWith([echo()], { examples: [{ user: 'hi', tool: 'shout', args: {} }] }), /examples\.0\.tool: "shout" is not a tool of this plugin/);
    throws(() => runtimeWith([echo()], { examples: [{ user: 'hi', tool: 'echo', args: { text: 'far too long' } }] }), /examples\.0\.args: .*must NOT have more than 5 characters/);
  });

  it('an excluded plugin is never created: no tools, no state, no prompt section', async () => {
    let created = 0;
    const plugin = { ...testPlugin('echoer'), create: () => (created++, { tools: [echo()] }) };
    const { logger } = capturingLogger();
    const runtime = new AgentRuntime({ plugins: [plugin], features: fromEnv({ echoer: false }), envNames: [], db: noDb, logger });
    expect(created).to.equal(0);
    expect(runtime.toolSchemas()).to.deep.equal([]);
    expect(await runtime.buildContext({ userDid: 'did:ixo:entity:a', roomId: 'r' })).to.deep.equal({ roomId: 'r', state: {}, promptSections: [] });
  });
});

describe('agent runtime: plugin routes', () => {
  it("a plugin's router is reached only on the exact paths its routePaths declares", async () => {
    const router = Router();
    router.get('/declared', (_req, res) => void res.json({ at: 'declared' }));
    router.get('/undeclared', (_req, res) => void res.json({ at: 'undeclared' }));
    const { logger } = capturingLogger();
    const runtime = new AgentRuntime({ plugins: [testPlugin('routed', {}, { router }, ['/declared'])], features: fromEnv(), envNames: [], db: noDb, logger });
    const app = express();
    app.use(runtime.routers());
    app.use((_req, res) => void res.status(404).end());
    expect((await request(app).get('/declared')).body).to.deep.equal({ at: 'declared' });
    expect((await request(app).get('/declared/')).status).to.equal(200);
    expect((await request(app).get('/undeclared')).status).to.equal(404);
    expect((await request(app).get('/DECLARED')).status).to.equal(404);
  });
});
