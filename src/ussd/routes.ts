// HTTP edge of area B. The OpenAPI validator has already checked the request (its failures
// render as `END Invalid input...`); handlers call the service and send its reply.
import type { RequestHandler, Router } from 'express';
import type { UssdDebugResponse, UssdRequest, UssdSessionsResponse } from '../../generated/openapi/types.gen.ts';
import { notFound, sendUssdText } from '../platform/http/errors.ts';
import type { UssdService } from './service.ts';
import { caseSensitiveRouter } from '../platform/http/scope.ts';

/** Before the validator: the rate limit for all of /api/ussd, and operator routes off unless enabled. */
export function ussdGate(rateLimit: RequestHandler, debugEnabled: boolean): Router {
  const router = caseSensitiveRouter();
  router.use('/api/ussd', rateLimit);
  if (!debugEnabled) {
    router.use(['/api/ussd/debug', '/api/ussd/sessions'], (req, _res, next) => next(notFound(`No route for ${req.method} ${req.path}.`)));
  }
  return router;
}

export function ussdRouter(service: UssdService, perPhoneLimit: RequestHandler): Router {
  const router = caseSensitiveRouter();

  router.post('/api/ussd', perPhoneLimit, async (req, res) => {
    const body = req.body as UssdRequest;
    const reply = await service.handle({
      sessionId: body.sessionId,
      serviceCode: body.serviceCode,
      phoneNumber: body.phoneNumber,
      text: body.text,
    });
    sendUssdText(res, 200, reply);
  });

  router.get('/api/ussd/debug/:sessionId', async (req, res) => {
    const [debug, activeSessions] = await Promise.all([service.debug(req.params.sessionId), service.activeSessions()]);
    if (!debug) {
      res.status(404).json({ error: 'Session not found' });
      return;
    }
    const body: UssdDebugResponse = {
      sessionId: debug.sessionId,
      debugInfo: { state: debug.state, context: debug.context, status: 'active' },
      activeSessions,
    };
    res.set('Cache-Control', 'no-store').json(body);
  });

  router.get('/api/ussd/sessions', async (_req, res) => {
    const activeSessions = await service.activeSessions();
    const body: UssdSessionsResponse = { activeSessions, count: activeSessions.length };
    res.set('Cache-Control', 'no-store').json(body);
  });

  return router;
}
