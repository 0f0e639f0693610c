// DID Core syntax (W3C DID 1.0, section 3.1):
//   did = "did:" method-name ":" method-specific-id
//   method-name = 1*method-char ; %x61-7A / DIGIT
//   method-specific-id = *( *idchar ":" ) 1*idchar ; idchar = ALPHA / DIGIT / "." / "-" / "_" / pct-encoded
// A DID URL (path, query or fragment) is not a DID.
const IDCHAR = '(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})';
const DID_RE = new RegExp(`^did:[a-z0-9]+:(?:${IDCHAR}*:)*${IDCHAR}+$`);

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
