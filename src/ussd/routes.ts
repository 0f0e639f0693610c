// HTTP edge of area B. The pipeline has already validated the request (its failures render as
// `END Invalid input...`); handlers call the service and send its reply, and map the area's
// errors to HTTP errors (the app's error handler renders those as END replies).
import type { ErrorRequestHandler, RequestHandler, Router } from 'express';
import { badRequest, noRoute, toAppError, unavailable } from '../platform/http/errors.ts';
import { SENT, type Handlers, type OperationsTagged } from '../platform/http/handlers.ts';
import { sendUssdText } from './reply.ts';
import { caseSensitiveRouter } from '../platform/http/scope.ts';
import type { Logger } from '../platform/logging.ts';
import { SessionBusyError, SessionMismatchError } from './errors.ts';
import type { UssdRateLimits } from './rate-limit.ts';
import type { UssdService } from './service.ts';

/** The HTTP error for one of the area's errors; anything else as it is. */
export function httpErrorOf(err: unknown): unknown {
  if (err instanceof SessionMismatchError) return badRequest(err.message, [{ pointer: `/body/${err.field}`, message: "is not the session's" }]);
  if (err instanceof SessionBusyError) return unavailable(err.message, err);
  return err;
}

/** Before the validator: the rate limit for all of /api/ussd, and operator routes off unless enabled. */
export function ussdGate(rateLimit: RequestHandler, debugEnabled: boolean): Router {
  const router = caseSensitiveRouter();
  router.use('/api/ussd', rateLimit);
  if (!debugEnabled) {
    router.use(['/api/ussd/debug', '/api/ussd/sessions'], (req, _res, next) => next(noRoute(req)));
  }
  return router;
}

/** The area's operations: the gateway's hop and session end, and the operator's views. */
export function ussdHandlers(service: UssdService, perPhoneLimit: UssdRateLimits['perPhone'], onReply: (reply: string) => void) {
  return {
    // A plain-text reply (the gateway shows it as is), after the per-phone limit the body names.
    postUssd: async ({ body, req, res }) => {
      if (!(await perPhoneLimit(body, req, res))) return SENT;
      const reply = await service
        .handle({
          sessionId: body.sessionId,
          serviceCode: body.serviceCode,
          phoneNumber: body.phoneNumber,
          text: body.text,
          ...(body.networkCode !== undefined ? { networkCode: body.networkCode } : {}),
        })
        .catch((err: unknown) => {
          throw httpErrorOf(err);
        });
      onReply(reply);
      sendUssdText(res, 200, reply);
      return SENT;
    },

    postUssdSessionEvent: async ({ body }) => {
      const recorded = await service.recordSessionEnd(body.sessionId, body.phoneNumber, {
        status: body.status,
        ...(body.durationInMillis !== undefined ? { durationMs: Number(body.durationInMillis) } : {}),
        ...(body.errorMessage ? { error: body.errorMessage.slice(0, 200) } : {}),
      });
      if (!recorded) return { status: 404, body: { error: 'Session not found' } };
      return { status: 200, body: { sessionId: body.sessionId, recorded: true } };
    },

    getUssdSessionDebug: async ({ path }) => {
      const [debug, activeSessions] = await Promise.all([service.debug(path.sessionId), service.activeSessions()]);
      if (!debug) return { status: 404, body: { error: 'Session not found' } };
      return {
        status: 200,
        body: { sessionId: debug.sessionId, debugInfo: { state: debug.state, context: debug.context, status: 'active' }, activeSessions },
        headers: { 'Cache-Control': 'no-store' },
      };
    },

    listUssdSessions: async () => {
      const activeSessions = await service.activeSessions();
      return { status: 200, body: { activeSessions, count: activeSessions.length }, headers: { 'Cache-Control': 'no-store' } };
    },
  } satisfies Handlers<OperationsTagged<'ussd'>>;
}

/**
 * Logs why a gateway POST was refused (its reply is only `END Invalid input`): the failing
 * fields and the rule they broke, never a value (the text holds the PINs typed). Mounted before
 * the app's error handler, which renders the reply.
 */
export function ussdRefusalLog(logger: Logger): ErrorRequestHandler {
  return (err, req, _res, next) => {
    const appErr = toAppError(err);
    if (req.method === 'POST' && /^\/api\/ussd\/?$/.test(req.path) && appErr.status < 500) {
      const fields = (appErr.errors ?? []).map((e) => ({ field: e.pointer, problem: e.message }));
      logger.warn({ status: appErr.status, ...(fields.length ? { fields } : { problem: appErr.title }) }, 'ussd request refused');
    }
    next(err);
  };
}
