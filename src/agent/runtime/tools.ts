// The tools of the loaded plugins: JSON Schema function definitions, and their execution with
// the arguments validated against the schema before the tool runs (an invalid call never
// reaches the tool, so it changes nothing).
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { ToolDefinition as ToolSchema } from '../../../generated/openapi/types.gen.ts';
import { badRequest, notFound, type FieldError } from '../../platform/http/errors.ts';
import { AgentBootError } from './manifest.ts';
import type { AgentPlugin, ToolDefinition, TurnContext } from './plugin.ts';
import { jsonPointer } from '../../platform/http/input.ts';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Where the arguments sit in an invocation request, for the pointers of field errors. */
const ARGUMENTS_POINTER = '/body/arguments';

interface RegisteredTool {
  definition: ToolDefinition;
  plugin: string;
  validate: ValidateFunction;
}

function fieldErrorsOf(errors: ErrorObject[] | null | undefined): FieldError[] {
  return (errors ?? []).map((e) => {
    const params = e.params as { missingProperty?: string; additionalProperty?: string };
    const child = params.missingProperty ?? params.additionalProperty;
    const pointer = `${ARGUMENTS_POINTER}${e.instancePath}${child !== undefined ? jsonPointer(child) : ''}`;
    const message = e.keyword === 'additionalProperties' ? 'is not a known argument' : (e.message ?? 'is invalid');
    return { pointer, message, rule: e.keyword };
  });
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
    if (!tool) throw notFound(`No tool named "${name}" is loaded.`);
    if (!tool.validate(args)) {
      const errors = fieldErrorsOf(tool.validate.errors);
      throw badRequest(
        `Invalid arguments for tool "${name}": ${errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}`,
        errors,
        'invalid-tool-arguments',
      );
    }
    return tool.definition.run(args as Record<string, unknown>, ctx);
  }
}
