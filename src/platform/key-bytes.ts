// 32-byte secrets from configuration (the PIN key, the validator's Ed25519 seed), written as
// hex or base64. Strict: Node's base64 decoder skips characters it does not know, so a value
// with a typo could otherwise decode to a different key of the right length.

/** The 32 bytes of 64 hex characters, or of base64 / base64url (43 characters, optional `=`); undefined for anything else. */
export function parse32ByteKey(value: string): Buffer | undefined {
  const v = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(v)) return Buffer.from(v, 'base64');
  if (/^[A-Za-z0-9_-]{43}=?$/.test(v)) return Buffer.from(v, 'base64url');
  return undefined;
}
