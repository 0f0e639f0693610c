// What a use case refuses, said without HTTP. Services throw DomainError with paths relative to
// the input they were given (`['fuelMeasurements', 'total']`, `['cursor']`); each edge renders
// it: the HTTP error handler as a problem with request pointers (http/errors.ts), area B as a
// reply on the phone, the MCP server as a tool error.
import { jsonPointer } from './json-pointer.ts';

/** A place in a use case's input, as reference tokens: a member of its body, or a named parameter. */
export type InputPath = readonly (string | number)[];

export interface InputIssue {
  path: InputPath;
  message: string;
  /** The rule that failed, where one applies. */
  rule?: string;
}

/** invalid: the input breaks a rule; unprocessable: well-formed but not acceptable now (a reused key). */
export type DomainErrorKind = 'invalid' | 'forbidden' | 'not-found' | 'conflict' | 'unprocessable';

export interface DomainErrorOptions {
  issues?: readonly InputIssue[];
  /** A machine-readable slug for the kind of refusal (problem type). */
  type?: string;
  /** The message ends with the issues, each as `<where> <message>`. */
  listIssues?: boolean;
  /** Extra facts for the caller (e.g. the resource a conflict is with). */
  extensions?: Record<string, unknown>;
}

/** A detail naming each failing place: `summary: <where> <message>; ...`. */
export function listedDetail(summary: string, failures: readonly { pointer: string; message: string }[]): string {
  return `${summary}: ${failures.map((f) => `${f.pointer} ${f.message}`).join('; ')}`;
}

/** An RFC 6901 pointer for an input path, relative to the input. */
export const inputPointer = (path: InputPath): string => jsonPointer(...path);

export class DomainError extends Error {
  override name = 'DomainError';
  readonly issues: readonly InputIssue[];
  readonly type?: string;
  readonly listIssues: boolean;
  readonly extensions?: Record<string, unknown>;

  constructor(
    readonly kind: DomainErrorKind,
    /** What is refused, without the issues. */
    readonly summary: string,
    opts: DomainErrorOptions = {},
  ) {
    const issues = opts.issues ?? [];
    super(opts.listIssues && issues.length ? listedDetail(summary, issues.map((i) => ({ pointer: inputPointer(i.path), message: i.message }))) : summary);
    this.issues = issues;
    this.type = opts.type;
    this.listIssues = opts.listIssues ?? false;
    this.extensions = opts.extensions;
  }
}

/** The input breaks rules; the message lists each issue after `summary`. */
export const invalidInput = (summary: string, issues: readonly InputIssue[], type = 'validation-error') =>
  new DomainError('invalid', summary, { issues, type, listIssues: true });
/** The input breaks a rule the detail explains on its own. */
export const refusedInput = (detail: string, issues: readonly InputIssue[] = [], type = 'validation-error') =>
  new DomainError('invalid', detail, { issues, type });
export const forbiddenAction = (detail: string) => new DomainError('forbidden', detail);
export const notFoundError = (detail: string) => new DomainError('not-found', detail);
export const conflictWith = (detail: string, issues: readonly InputIssue[] = [], type = 'conflict', extensions?: Record<string, unknown>) =>
  new DomainError('conflict', detail, { issues, type, extensions });

/**
 * What cannot be done now through no fault of the request, and may be once the service has
 * caught up (an instance mid rolling restart): 503 with Retry-After, never a refusal of the input.
 */
export class UnavailableError extends Error {
  override name = 'UnavailableError';
}

/** Throws invalidInput when there are issues. */
export function assertNoIssues(issues: readonly InputIssue[], summary: string): void {
  if (issues.length) throw invalidInput(summary, issues);
}
