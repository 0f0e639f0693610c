// Structured logs (pino). Secrets never reach a log line: credentials, PINs and keys are
// censored by path, and phone numbers are masked by whoever logs them (maskPhone).
import { pino, type DestinationStream, type Logger } from 'pino';
import type { RequestHandler } from 'express';
import type { Config } from '../config.ts';
import { requestContextOf } from './http/request-context.ts';

export type { Logger };

const REDACT_PATHS = [
  // PostgreSQL puts row values in an error's detail ("Key (phone_number)=(+2547...) already exists").
  'err.detail',
  'err.cause.detail',
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

/** The service's logger; `destination` (default stdout) is for tests that read what is logged. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, destination?: DestinationStream): Logger {
  const options = { level: config.LOG_LEVEL, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/** Keeps the country code and the last two digits: +254712345678 -> +254*******78. */
export function maskPhone(phone: string): string {
  const m = /^(\+\d{1,3})(\d*)(\d{2})$/.exec(phone);
  if (!m) return '[phone]';
  return `${m[1]}${'*'.repeat(m[2]!.length)}${m[3]}`;
}

/**
 * Request logging: one line per request when it completes (or is aborted) with its request and
 * trace ids, method, path without query, status and latency; never bodies or headers. Written on pino directly rather
 * than pino-http: its per-request child logger cost about a fifth of the throughput of a
 * simple authenticated route (make bench), for features (req.log, request-scoped bindings)
 * nothing here uses.
 */
export function requestLogger(logger: Logger): RequestHandler {
  return (req, res, next) => {
    if (!logger.isLevelEnabled('error')) return next();
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const statusCode = res.statusCode;
      const aborted = !res.writableFinished;
      // 501 answers a method or route the gateway does not serve (area C, as grpc-gateway v1): the
      // caller's miss, not a failure. An aborted request is the client's going (or a cut at
      // shutdown, logged there): a warning, not a fault to page anyone about.
      const level = statusCode >= 500 && statusCode !== 501 ? 'error' : aborted || statusCode >= 400 ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const ids = requestContextOf(req);
      logger[level](
        {
          req: { id: ids?.requestId, traceId: ids?.traceId, method: req.method, path: req.originalUrl.split('?')[0] },
          res: { statusCode },
          responseTime: Number(process.hrtime.bigint() - started) / 1e6,
        },
        aborted ? 'request aborted' : 'request completed',
      );
    });
    next();
  };
}
