// The errors the client throws when `throwOnError` is on: an answer with an error status as
// HearthApiError (from its RFC 9457 problem details), a request that got no answer (network
// failure, timeout) as HearthRequestError.
import type { Problem, ProblemFieldError } from '../../generated/openapi/types.gen.js';

/** An error status from Hearth, with the problem details it answered (RFC 9457). */
export class HearthApiError extends Error {
  override readonly name = 'HearthApiError';
  readonly status: number;
  /** The problem type, a URI reference (e.g. `https://hearth.example.org/problems/idempotency-key-reuse`); `about:blank` when the body was no problem. */
  readonly type: string;
  readonly title: string;
  readonly detail: string | undefined;
  /** Field-level failures, each naming the field by JSON pointer (e.g. `/body/fuelMeasurements/total`) and the rule broken. */
  readonly issues: ProblemFieldError[];
  /** The request's id (X-Request-Id), to quote when reporting a problem. */
  readonly requestId: string | undefined;
  /** The body as answered: the problem details, or the text of a body that was none. */
  readonly body: unknown;
  /** The raw response (its body is already read). */
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const problem = isProblem(body) ? body : undefined;
    const title = problem?.title ?? (response.statusText || `HTTP ${response.status}`);
    super(problem?.detail ? `${response.status} ${title}: ${problem.detail}` : `${response.status} ${title}`);
    this.status = response.status;
    this.type = problem?.type ?? 'about:blank';
    this.title = title;
    this.detail = problem?.detail;
    this.issues = problem?.errors ?? [];
    this.requestId = problem?.requestId ?? response.headers.get('X-Request-Id') ?? undefined;
    this.body = body;
    this.response = response;
  }
}

/** A request that got no answer: the network failed, or it timed out (`timedOut`), after every attempt allowed. */
export class HearthRequestError extends Error {
  override readonly name = 'HearthRequestError';
  readonly timedOut: boolean;

  constructor(
    readonly request: Request,
    cause: unknown,
  ) {
    const timedOut = cause instanceof Error && cause.name === 'TimeoutError';
    super(`${request.method} ${request.url}: ${timedOut ? 'timed out' : `no answer (${cause instanceof Error ? cause.message : String(cause)})`}`, { cause });
    this.timedOut = timedOut;
  }
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && typeof (body as Problem).title === 'string' && typeof (body as Problem).status === 'number';
}
