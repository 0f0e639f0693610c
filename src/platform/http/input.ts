// Values a request may not carry, whatever the route: the two that the contract's JSON types
// admit but the databases cannot store as sent. Checked once here, so every area refuses them
// with a 400 in its own error shape, and SQLite and PostgreSQL behave alike.
import type { RequestHandler } from 'express';
import { jsonPointer } from '../json-pointer.ts';
import { badRequest, type FieldError } from './errors.ts';

/** Whole documents are walked, but no deeper than this: JSON nested deeper is refused outright. */
const MAX_DEPTH = 64;

/**
 * The first value under `value` that cannot be stored: a string or key holding U+0000
 * (PostgreSQL text refuses it) or a number that is not finite (JSON.parse reads 1e400 as
 * Infinity, which would be stored as null). `path` names `value`; it is one stack pushed and
 * popped during the walk (every request's body is walked), and is only read for a finding.
 */
export function unstorableValue(value: unknown, path: (string | number)[] = [], depth = 0): FieldError | undefined {
  if (typeof value === 'string') {
    return value.includes('\u0000') ? { pointer: jsonPointer(...path), message: 'must not contain the NUL character (U+0000)', rule: 'no-nul-character' } : undefined;
  }
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
    if (key.includes('\u0000')) return { pointer: jsonPointer(...path, key), message: 'names a member with the NUL character (U+0000)', rule: 'no-nul-character' };
    path.push(key);
    const found = unstorableValue((value as Record<string, unknown>)[key], path, depth + 1);
    path.pop();
    if (found) return found;
  }
  return undefined;
}

/** 400 for a body or query that holds an unstorable value; mounted after the body parsers. */
export function rejectUnstorableInput(): RequestHandler {
  return (req, _res, next) => {
    const found = unstorableValue(req.query, ['query']) ?? unstorableValue(req.body, ['body']);
    if (!found) return next();
    next(badRequest(`The request cannot be accepted: ${found.pointer} ${found.message}.`, [found], 'unstorable-value'));
  };
}
