// DID syntax (W3C DID 1.0, section 3.1) as the contract states it: the `Did` schema's pattern is
// the one rule, read from the bundled contract, so partners' validators and ours agree.
// A DID URL (path, query or fragment) is not a DID.
import { bundledContract, contractSchema } from './contract.ts';

/** The contract's `Did` pattern, as written there. */
export const DID_PATTERN: string = contractSchema(bundledContract(), 'Did').pattern ?? '';
const DID_RE = new RegExp(DID_PATTERN, 'u');
/** DID syntax taking any percent-escape: what passes it but not DID_RE is a DID spelt another way. */
const LOOSE_DID_RE = /^did:[a-z0-9]+:(?:(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})*:)*(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})+$/u;

export function isDid(value: string): boolean {
  return DID_RE.test(value);
}

/** Why value is not a DID, or undefined when it is one. */
export function didSyntaxError(value: string): string | undefined {
  if (isDid(value)) return undefined;
  if (/^did:[a-z0-9]+:[^/?#]+[/?#]/.test(value) && isDid(value.split(/[/?#]/)[0]!)) {
    return `${value} is a DID URL (it has a path, query or fragment), not a DID`;
  }
  if (LOOSE_DID_RE.test(value)) {
    return `${value} spells a character with a percent-escape where it must stand as itself, or an escape in lower case: each DID has one spelling (RFC 3986 section 6.2.2)`;
  }
  return `${value} is not a DID (expected did:<method>:<method-specific-id>)`;
}

/**
 * A validator's failure of the contract's `Did` pattern, restated as the DID rule: which part
 * of DID syntax the value breaks. Undefined for any other failure.
 */
export function didPatternFailure(failure: { keyword: string; pattern?: string }, value: unknown): { message: string; rule: 'did-syntax' } | undefined {
  if (failure.keyword !== 'pattern' || failure.pattern !== DID_PATTERN || typeof value !== 'string') return undefined;
  return { message: didSyntaxError(value) ?? 'is not a DID', rule: 'did-syntax' };
}
