// Replies to a telecom gateway: plain text it shows on the phone as is. Errors on the gateway's
// POST are replies too (HTTP 200 `END ...`, in USSD_DEFAULT_LANGUAGE): the gateway shows any
// other answer as a network failure, so the household would never read why.
import type { Request, Response } from 'express';
import type { ErrorRenderer } from '../platform/http/errors.ts';
import type { Language } from './i18n/catalogue.ts';
import { CATALOGUES } from './i18n/index.ts';

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

/** Errors of the gateway's POST as END replies; a wrong method on it is an ordinary 405 problem. */
export function ussdErrorRendererFor(replies: UssdFailureReplies): (req: Request) => ErrorRenderer | undefined {
  const render: ErrorRenderer = (err, _req, res) => sendUssdText(res, 200, err.status < 500 ? replies.invalid : replies.unavailable);
  return (req) => (req.method === 'POST' && (req.path === '/api/ussd' || req.path === '/api/ussd/') ? render : undefined);
}
