// Structured logs (pino). Secrets never reach a log line: credentials, PINs and keys are
// censored by path, and phone numbers are masked by whoever logs them (maskPhone).
import { pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import type { Config } from '../config.ts';

export type { Logger };

const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.pin',
  '*.newPin',
  '*.apiKey',
  '*.key',
  '*.password',
  '*.phoneNumber',
  '*.privateKey',
  'pin',
  'apiKey',
  'phoneNumber',
];

export function createLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
  return pino({ level: config.LOG_LEVEL, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}

/** Keeps the country code and the last two digits: +254712345678 -> +254*******78. */
export function maskPhone(phone: string): string {
  const m = /^(\+\d{1,3})(\d*)(\d{2})$/.exec(phone);
  if (!m) return '[phone]';
  return `${m[1]}${'*'.repeat(m[2]!.length)}${m[3]}`;
}

/** Request logging: method, path without query, status and latency; never bodies or headers. */
export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    serializers: {
      req: (req: { method: string; url: string; id: unknown }) => ({
        id: req.id,
        method: req.method,
        path: req.url.split('?')[0],
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
  });
}
