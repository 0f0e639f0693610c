// The tools of the loaded plugins: JSON Schema function definitions, and their execution with
// the arguments validated against the schema before the tool runs (an invalid call never
// reaches the tool, so it changes nothing).
import { Ajv, type ValidateFunction } from 'ajv';
import type { ToolDefinition as ToolSchema } from '../../../generated/openapi/types.gen.ts';
import { DomainError, notFoundError } from '../../platform/domain-errors.ts';
import { schemaIssues } from '../../platform/schema-issues.ts';
import { AgentBootError } from './manifest.ts';
import type { AgentPlugin, ToolDefinition, TurnContext } from './plugin.ts';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

interface RegisteredTool {
  definition: ToolDefinition;
  plugin: string;
  validate: ValidateFunction;
}

export class ToolRegistry {
  // strict: a typo in a tool's schema (an unknown keyword) fails boot instead of validating nothing.
  private readonly ajv = new Ajv({ allErrors: true, strict: true });
  private readonly tools = new Map<string, RegisteredTool>();

  /** Registers a loaded plugin's tools and checks its manifest examples against them. */
  register(plugin: AgentPlugin, tools: readonly ToolDefinition[]): void {
    const owner = plugin.manifest.name;
    for (const tool of tools) {
      if (!TOOL_NAME.test(tool.name)) throw new AgentBootError(`Plugin "${owner}": tool name "${tool.name}" must match ${TOOL_NAME}`);
      if (this.tools.has(tool.name)) {
        throw new AgentBootError(`Plugin "${owner}": tool "${tool.name}" is already defined by plugin "${this.tools.get(tool.name)!.plugin}"`);
      }
      if (!tool.description.trim()) throw new AgentBootError(`Plugin "${owner}": tool "${tool.name}" needs a description`);
      if (tool.parameters.type !== 'object') throw new AgentBootError(`Plugin "${owner}": parameters of tool "${tool.name}" must be an object schema`);
      let validate: ValidateFunction;
      try {
        validate = this.ajv.compile(tool.parameters);
      } catch (err) {
        throw new AgentBootError(`Plugin "${owner}": parameters of tool "${tool.name}" are not a valid JSON Schema: ${(err as Error).message}`);
      }
      this.tools.set(tool.name, { definition: tool, plugin: owner, validate });
    }
    plugin.manifest.examples.forEach((example, i) => {
      const tool = this.tools.get(example.tool);
      if (!tool || tool.plugin !== owner) {
        throw new AgentBootError(`Invalid manifest of plugin "${owner}": examples.${i}.tool: "${example.tool}" is not a tool of this plugin`);
      }
      if (!tool.validate(example.args)) {
        throw new AgentBootError(`Invalid manifest of plugin "${owner}": examples.${i}.args: ${this.ajv.errorsText(tool.validate.errors)}`);
      }
    });
  }

  /** The definitions as LLM APIs take them, in registration (dependency) order. */
  list(): ToolSchema[] {
    return [...this.tools.values()].map(({ definition: d }) => ({ name: d.name, description: d.description, parameters: d.parameters }));
  }

  namesOf(plugin: string): string[] {
    return [...this.tools.values()].filter((t) => t.plugin === plugin).map((t) => t.definition.name);
  }

  /** Validates the arguments, then runs the tool. Unknown tool: 404; invalid arguments: 400. */
  async invoke(name: string, args: unknown, ctx: TurnContext): Promise<unknown> {
    const tool = this.tools.get(name);
    if (!tool) throw notFoundError(`No tool named "${name}" is loaded.`);
    if (!tool.validate(args)) {
      // The arguments are the `arguments` member of an invocation's input.
      const issues = schemaIssues(tool.validate.errors, args, { prefix: ['arguments'], unknownMember: 'is not a known argument' });
      throw new DomainError('invalid', `Invalid arguments for tool "${name}"`, { issues, type: 'invalid-tool-arguments', listIssues: true });
    }
    return tool.definition.run(args as Record<string, unknown>, ctx);
  }
}
