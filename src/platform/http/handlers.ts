// The areas' HTTP handlers, typed from the contract: an area exports an object with one handler
// per operationId (Handlers<...>, checked with `satisfies`), and the app dispatches each request
// to the handler of the operation the pipeline resolved (operations.ts) and validated. A missing,
// extra or mistyped handler is a compile error; no handler reads or casts the request itself.
import type { Request, RequestHandler, Response } from 'express';
import type { Operations } from '../../../generated/operations.gen.ts';
import type { Principal } from '../keys/service.ts';
import { principalIfAny } from './auth.ts';
import { toAppError } from './errors.ts';
import { operationOf, type ResolvedOperation } from './operations.ts';

export type OperationId = keyof Operations;

/** The operations whose (first) tag is `Tag`: what one handler object serves. */
export type OperationsTagged<Tag extends string> = { [Id in OperationId]: Operations[Id]['tag'] extends Tag ? Id : never }[OperationId];

type Data<Id extends OperationId> = Operations[Id]['data'];
/** A request part the operation may lack: an empty object then (the request has none). */
type Part<T> = [Exclude<T, undefined>] extends [never] ? Record<string, never> : Exclude<T, undefined>;

/** What a handler gets: the request's validated parts, as the contract types them, and its caller. */
export interface HandlerInput<Id extends OperationId> {
  path: Part<Data<Id>['path']>;
  query: Part<Data<Id>['query']>;
  /** The operation's header parameters, by the contract's names. */
  headers: Part<Data<Id>['headers']>;
  body: Data<Id>['body'];
  /** The caller, for an operation that asks for a key. */
  principal: Operations[Id]['secured'] extends true ? Principal : undefined;
  /** For answers no Reply describes (bytes, conditional requests, replayed JSON text); SENT then. */
  req: Request;
  res: Response;
}

type ReplyOf<R> = { [S in keyof R]: { status: S; body: R[S]; headers?: Record<string, string> } }[keyof R];

/** An answer the contract documents for the operation, sent as JSON (none for a body-less status, e.g. 204). */
export type Reply<Id extends OperationId> = ReplyOf<Operations[Id]['responses']> | ReplyOf<Operations[Id]['errors']>;

/** Returned by a handler that wrote its answer to `res` itself. */
export const SENT = Object.freeze({ sent: true as const });

export type Handler<Id extends OperationId> = (input: HandlerInput<Id>) => Reply<Id> | typeof SENT | Promise<Reply<Id> | typeof SENT>;

/** One handler for each of the operations `Ids`, and none other (with `satisfies`). */
export type Handlers<Ids extends OperationId> = { [Id in Ids]: Handler<Id> };

/** Compiles only when `T` holds a handler for every operation of the contract; the error names a missing one. */
export type EveryOperation<T extends { [Id in OperationId]: unknown }> = T;

/** The app's handler of each operation, the areas' objects together. */
export type HandlerTable = { [Id in OperationId]?: Handler<Id> };

interface UntypedInput {
  path: Record<string, string>;
  query: unknown;
  headers: Record<string, string>;
  body: unknown;
  principal: Principal | undefined;
  req: Request;
  res: Response;
}
type UntypedReply = { status: number; body: unknown; headers?: Record<string, string> } | typeof SENT;

/** The validated path parameters (the validator decodes them; Express's own req.params are the router's). */
function pathOf(req: Request): Record<string, string> {
  return (req as { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams ?? {};
}

/** The operation's header parameters the request carries, by the contract's names. */
function headersOf(req: Request, op: ResolvedOperation): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, pointer] of op.parameters) {
    const value = pointer.startsWith('/headers/') ? req.get(name) : undefined;
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/**
 * Runs the handler of the request's resolved operation; other requests pass on. Mounted behind
 * contractOnly (openapi.ts), so only for a request its operation's validator validated. HEAD
 * runs the GET's handler (it resolved as the GET), and Node sends its headers alone.
 */
export function operationDispatcher(table: HandlerTable): RequestHandler {
  return async (req, res, next) => {
    const op = operationOf(req);
    // The one place the validated request meets the contract's types: the validator has checked them.
    const handler = op && (table[op.operationId as OperationId] as ((input: UntypedInput) => UntypedReply | Promise<UntypedReply>) | undefined);
    if (!op || !handler) return next();
    const reply = await handler({ path: pathOf(req), query: req.query, headers: headersOf(req, op), body: req.body as unknown, principal: principalIfAny(req), req, res });
    if ('sent' in reply) return;
    if (reply.headers) res.set(reply.headers);
    res.status(reply.status);
    if (reply.body === undefined) res.end();
    else res.json(reply.body);
  };
}

/**
 * Runs `middleware` (a per-request limit, say) inside a handler: true when it passed the request
 * on, false when it answered the request itself; its error is thrown. For middleware whose
 * promise settles once it has done either, as express-rate-limit's does.
 */
export function passes(middleware: RequestHandler, req: Request, res: Response): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const ran: unknown = middleware(req, res, (err?: unknown) => (err ? reject(err instanceof Error ? err : toAppError(err)) : resolve(true)));
    Promise.resolve(ran).then(() => resolve(false), reject);
  });
}
