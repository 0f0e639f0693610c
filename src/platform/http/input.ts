// Values a request may not carry, whatever the route: those the contract's JSON types admit but
// the databases cannot store as sent. Checked once here, so every area refuses them
// with a 400 in its own error shape, and SQLite and PostgreSQL behave alike.
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { visit } from 'jsonc-parser';
import { jsonPointer } from '../json-pointer.ts';
import { AppError, badRequest, type FieldError } from './errors.ts';

/** Whole documents are walked, but no deeper than this: JSON nested deeper is refused outright. */
const MAX_DEPTH = 64;

/**
 * Why a string cannot be stored, if it cannot: it holds U+0000 (PostgreSQL text refuses it) or a
 * lone surrogate, which is not text (RFC 7493 §2.1 I-JSON: canonical JSON refuses it, and
 * PostgreSQL would store U+FFFD in its place). `lead` says how the string is part of the input.
 */
function unstorableText(text: string, path: (string | number)[], lead: string): FieldError | undefined {
  if (text.includes('\u0000')) return { pointer: jsonPointer(...path), message: `${lead} the NUL character (U+0000)`, rule: 'no-nul-character' };
  if (!text.isWellFormed()) return { pointer: jsonPointer(...path), message: `${lead} a lone surrogate (half of a UTF-16 pair), which is not a character`, rule: 'no-lone-surrogate' };
  return undefined;
}

/**
 * The first value under `value` that cannot be stored: a string or key that is not storable text
 * (unstorableText) or a number that is not finite (JSON.parse reads 1e400 as Infinity, which would
 * be stored as null). `path` names `value`; it is one stack pushed and popped during the walk
 * (every request's body is walked), and is only read for a finding.
 */
export function unstorableValue(value: unknown, path: (string | number)[] = [], depth = 0): FieldError | undefined {
  if (typeof value === 'string') return unstorableText(value, path, 'must not contain');
  if (typeof value === 'number') {
    return Number.isFinite(value) ? undefined : { pointer: jsonPointer(...path), message: 'must be a finite number', rule: 'finite-number' };
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return { pointer: jsonPointer(...path), message: `is nested more than ${MAX_DEPTH} levels deep`, rule: 'max-depth' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const found = unstorableValue(value[i], path, depth + 1);
      path.pop();
      if (found) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    const badKey = unstorableText(key, path, 'names a member with');
    if (badKey) {
      path.pop();
      return badKey;
    }
    const found = unstorableValue((value as Record<string, unknown>)[key], path, depth + 1);
    path.pop();
    if (found) return found;
  }
  return undefined;
}

const refusal = (found: FieldError) => badRequest(`The request cannot be accepted: ${found.pointer} ${found.message}.`, [found], 'unstorable-value');

/** 400 for a body or query that holds an unstorable value; mounted after the body parsers. */
export function rejectUnstorableInput(): RequestHandler {
  return (req, _res, next) => {
    const found = unstorableValue(req.query, ['query']) ?? unstorableValue(req.body, ['body']);
    next(found && refusal(found));
  };
}

/** The 400 for a form body (as sent) that holds an unstorable value, for a router that reads one itself. */
export function unstorableForm(form: string): AppError | undefined {
  for (const [name, value] of new URLSearchParams(form)) {
    const found = unstorableValue({ [name]: value }, ['body']);
    if (found) return refusal(found);
  }
  return undefined;
}

/** Header fields a request carries once at most: which Host it is for, whose key it uses, what its body is. */
const SINGLETON_HEADERS = new Set(['host', 'authorization', 'content-type']);

/**
 * The request's header rules, in its area's shape (the server hands Node's own cases here: see
 * platform/server.ts): 400 for an HTTP/1.1 request without Host, or repeating Host (RFC 9112
 * section 3.2: a server must refuse both) or Authorization (Node would keep the first silently:
 * which key a request uses must not be a guess) or Content-Type (which body it is must not be
 * either); 417 for an expectation other than 100-continue (RFC 9110 section 10.1.1); 501 for a
 * transfer coding other than chunked, which nothing here would undo (RFC 9112 section 6.1). Mounted with the request-target rule, before anything
 * reads them.
 */
export const requestHeaderRules: RequestHandler = (req, _res, next) => {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    return next(badRequest('An HTTP/1.1 request must carry a Host header.', undefined, 'missing-host'));
  }
  const codings = req.headers['transfer-encoding']?.toLowerCase().split(',').map((c) => c.trim());
  if (codings?.some((c) => c !== 'chunked')) {
    return next(new AppError(501, 'Not Implemented', { type: 'transfer-coding-unsupported', detail: `The transfer coding ${JSON.stringify(req.headers['transfer-encoding'])} is not supported; only chunked is.` }));
  }
  const expect = req.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    return next(new AppError(417, 'Expectation Failed', { type: 'expectation-failed', detail: `The expectation ${JSON.stringify(expect)} cannot be met; only 100-continue is understood.` }));
  }
  const seen = new Set<string>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (!SINGLETON_HEADERS.has(name)) continue;
    if (seen.has(name)) return next(badRequest(`The request must carry one ${req.rawHeaders[i]} header, not several.`, undefined, 'repeated-header'));
    seen.add(name);
  }
  next();
};

function assertUtf8Charset(encoding: string, what: string): void {
  if (encoding.toLowerCase() !== 'utf-8') {
    throw new AppError(415, 'Unsupported Media Type', { type: 'charset-unsupported', detail: `unsupported charset "${encoding.toUpperCase()}": ${what} is sent as UTF-8` });
  }
}

const notUtf8 = (message: string) => badRequest('The request body is not valid UTF-8.', [{ pointer: '/body', message, rule: 'utf-8' }]);

/**
 * body-parser's `verify` for form bodies (a USSD gateway's): UTF-8 once its %-escapes are decoded
 * (the WHATWG URL standard's form encoding), not decoded with U+FFFD in place of bad bytes.
 */
export function checkFormBody(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
  assertUtf8Charset(encoding, 'a form');
  const bytes = Buffer.from(body.toString('latin1').replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
  if (!isUtf8(bytes)) throw notUtf8('must be UTF-8 text once its %-escapes are decoded');
}

/**
 * Whether the JSON text nests arrays and objects more than MAX_DEPTH deep. Read in one loop, not
 * by recursion: a body thousands of levels deep would otherwise overflow the stack of the parser
 * that looks for repeated names, and answer as a failed check instead of a 400.
 */
function nestedTooDeep(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * The first name an object of the JSON text has twice, as a pointer to it under `/body`, if any
 * and the text is JSON at all (else the parser's own error says so). Names are compared as read
 * (`"\u0061"` is `"a"`).
 */
function repeatedName(text: string): string | undefined {
  const names: Set<string>[] = [];
  let found: string | undefined;
  let malformed = false;
  visit(
    text,
    {
      onObjectBegin: () => void names.push(new Set()),
      onObjectEnd: () => void names.pop(),
      onObjectProperty: (name, _offset, _length, _line, _column, path) => {
        const seen = names.at(-1)!;
        if (found === undefined && seen.has(name)) found = jsonPointer('body', ...path(), name);
        seen.add(name);
      },
      onError: () => void (malformed = true),
    },
    { disallowComments: true, allowTrailingComma: false },
  );
  return malformed ? undefined : found;
}

/**
 * body-parser's `verify` for JSON bodies, which every area's JSON passes: a body that is not
 * UTF-8 (RFC 8259 §8.1), or says another charset, is refused, not decoded with U+FFFD in place of its bad bytes and stored
 * so; so is an object with a name twice (I-JSON, RFC 7493 §2.3), whose value is not defined:
 * JSON.parse keeps the last, another reader the first (a verified credential would say one
 * thing to us and another to it); so is JSON nested deeper than any value may be (max-depth, as
 * unstorableValue), before anything reads it recursively. Thrown here, the 400 keeps its status through the parser and
 * is answered in the area's shape.
 */
export function checkJsonBody(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
  // body-parser takes any utf-* charset; JSON between systems is UTF-8 alone (RFC 8259 §8.1).
  assertUtf8Charset(encoding, 'JSON');
  if (!isUtf8(body)) throw notUtf8('must be UTF-8 text (RFC 8259 §8.1)');
  const text = body.toString('utf8');
  if (nestedTooDeep(text)) throw refusal({ pointer: '/body', message: `is nested more than ${MAX_DEPTH} levels deep`, rule: 'max-depth' });
  const repeated = repeatedName(text);
  if (repeated !== undefined) {
    throw badRequest(`The request body names a member twice: ${repeated}.`, [
      { pointer: repeated, message: 'is a name its object already has; each name may appear once (I-JSON, RFC 7493 §2.3)', rule: 'unique-names' },
    ]);
  }
}
