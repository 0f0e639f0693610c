// RFC 6901 JSON pointers: made from reference tokens, and followed into a document.

/** A JSON pointer from unescaped reference tokens: `~` -> `~0`, `/` -> `~1`. */
export function jsonPointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => `/${String(t).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** A JSON pointer's reference tokens, unescaped. */
export function pointerTokens(pointer: string): string[] {
  return pointer.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The value a JSON pointer names in a document, or undefined. */
export function valueAtPointer(doc: unknown, pointer: string): unknown {
  let value = doc;
  for (const key of pointerTokens(pointer)) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return value;
}
