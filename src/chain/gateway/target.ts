// The request target as grpc-gateway v1 sees it on a Cosmos node, where the gateway mux sits
// behind gorilla/mux: routes match the decoded path (Go's URL.Path), so an encoded slash (%2F)
// separates segments like a plain one, and a decoded path with `//`, `.` or `..` segments is
// answered 301 to the cleaned path (the app's request-target rule cleans the raw path before).

/** Go's URL.Path for a raw path: every %XX decoded; undefined for a bad escape (Go answers 400). */
export function decodeTargetPath(raw: string): string | undefined {
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** Characters Go's URL.EscapedPath leaves as they are; every other byte becomes %XX (upper case). */
const PATH_SAFE = /^[A-Za-z0-9\-_.~$&+,/:;=@]$/;

/** The Location gorilla/mux sends: the cleaned path escaped as Go escapes paths, then the query as received. */
export function redirectLocation(cleanedPath: string, rawQuery: string | undefined): string {
  let escaped = '';
  for (const byte of Buffer.from(cleanedPath, 'utf8')) {
    const c = String.fromCharCode(byte);
    escaped += byte < 0x80 && PATH_SAFE.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return rawQuery === undefined ? escaped : `${escaped}?${rawQuery}`;
}
