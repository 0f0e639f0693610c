// DID syntax (W3C DID 1.0, section 3.1) as the contract states it: the `Did` schema's pattern is
// the one rule, read from the bundled contract, so partners' validators and ours agree.
// A DID URL (path, query or fragment) is not a DID.
import { bundledContract, contractSchema } from './contract.ts';

/** The contract's `Did` pattern, as written there. */
export const DID_PATTERN: string = contractSchema(bundledContract(), 'Did').pattern ?? '';
const DID_RE = new RegExp(DID_PATTERN, 'u');

export function isDid(value: string): boolean {
  return DID_RE.test(value);
}

/** Why value is not a DID, or undefined when it is one. */
export function didSyntaxError(value: string): string | undefined {
  if (isDid(value)) return undefined;
  if (/^did:[a-z0-9]+:[^/?#]+[/?#]/.test(value) && isDid(value.split(/[/?#]/)[0]!)) {
    return `${value} is a DID URL (it has a path, query or fragment), not a DID`;
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
