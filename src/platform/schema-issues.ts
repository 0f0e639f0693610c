// A JSON Schema validator's (Ajv's) failures as input issues: the same paths and wording for
// every in-process check against a schema (area A's bodies, agent tool arguments).
import type { ErrorObject } from 'ajv';
import { didPatternFailure } from './did.ts';
import type { InputIssue } from './domain-errors.ts';
import { pointerTokens, valueAtPointer } from './json-pointer.ts';

/**
 * One issue per failure, its path relative to the validated document (under `prefix`).
 * `unknownMember` words a member the schema does not allow. `if` failures are left out: the
 * failure of the `then` they guard is the one that says what is wrong.
 */
export function schemaIssues(
  errors: readonly ErrorObject[] | null | undefined,
  doc: unknown,
  opts: { prefix?: readonly string[]; unknownMember?: string } = {},
): InputIssue[] {
  const prefix = opts.prefix ?? [];
  return (errors ?? [])
    .filter((e) => e.keyword !== 'if')
    .map((e) => {
      const path = [...prefix, ...pointerTokens(e.instancePath)];
      const did = didPatternFailure({ keyword: e.keyword, pattern: (e.params as { pattern?: string }).pattern }, valueAtPointer(doc, e.instancePath));
      if (did) return { path, ...did };
      const { missingProperty, additionalProperty } = e.params as { missingProperty?: string; additionalProperty?: string };
      const member = e.keyword === 'required' ? missingProperty : e.keyword === 'additionalProperties' ? additionalProperty : undefined;
      // A contract pattern may say in words what it requires (needs Ajv's `verbose` for the schema).
      const worded = e.keyword === 'pattern' ? (e.parentSchema as { 'x-hearth-message'?: string } | undefined)?.['x-hearth-message'] : undefined;
      const message =
        worded ??
        (e.keyword === 'additionalProperties' ? (opts.unknownMember ?? 'is not a known field') : e.keyword === 'required' ? 'is required' : (e.message ?? 'is invalid'));
      return { path: member !== undefined ? [...path, member] : path, message, rule: e.keyword };
    });
}
