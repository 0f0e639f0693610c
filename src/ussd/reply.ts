// Replies to a telecom gateway: plain text it shows on the phone as is. Errors on the gateway's
// POST are replies too (HTTP 200 `END ...`, in the session's language when this instance knows
// it, else USSD_DEFAULT_LANGUAGE): the gateway shows any other answer as a network failure, so
// the household would never read why.
import type { Request, Response } from 'express';
import type { ErrorRenderer } from '../platform/http/errors.ts';
import type { Language } from './i18n/catalogue.ts';
import { CATALOGUES, LANGUAGES } from './i18n/index.ts';

/** A reply to a telecom gateway: plain text, never cached or revalidated (no ETag work). */
export function sendUssdText(res: Response, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** The two END replies for a hop refused (4xx) or failed (5xx). */
export interface UssdFailureReplies {
  invalid: string;
  unavailable: string;
}

/** The END replies for a hop refused or failed, in `language`. */
export function failureReplies(language: Language): UssdFailureReplies {
  const { failures } = CATALOGUES[language];
  return { invalid: `END ${failures.invalidInput}`, unavailable: `END ${failures.unavailable}` };
}

/**
 * Errors on the gateway's route as END replies in the hop's language (`languageOf`): the route
 * answers only `text/plain` (architecture.md, Errors). A wrong method is no hop (gateways POST):
 * its 405 and Allow stand, with the END text.
 */
export function ussdErrorRendererFor(languageOf: (req: Request) => Language): (req: Request) => ErrorRenderer | undefined {
  const replies = new Map(LANGUAGES.map((language) => [language, failureReplies(language)]));
  const render: ErrorRenderer = (err, req, res, headers) => {
    const { invalid, unavailable } = replies.get(languageOf(req))!;
    if (err.status === 405) {
      res.set(headers);
      return sendUssdText(res, 405, invalid);
    }
    sendUssdText(res, 200, err.status < 500 ? invalid : unavailable);
  };
  return (req) => (req.path === '/api/ussd' || req.path === '/api/ussd/' ? render : undefined);
}
