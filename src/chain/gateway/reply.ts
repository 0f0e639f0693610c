// How the gateway writes a JSON answer, byte for byte as the node's gateway does. Both send
// `Content-Type: application/json` (no charset). v1 (Cosmos' gogo jsonpb) writes every string
// with Go's encoding/json, which escapes <, > and & and the JavaScript line terminators U+2028
// and U+2029 as \u00XX; v2 (protojson) escapes DEL as \u007f. JSON.stringify escapes none of them.
import type { Response } from 'express';
import type { GatewayStyle } from '../services.ts';
import type { Json } from './render.ts';

const ESCAPED: Record<GatewayStyle, RegExp> = { v1: /[<>&\u2028\u2029]/g, v2: /\x7f/g };

const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Sends `text` (a JSON document) as the node's gateway does: status, exact content type, length. */
export function sendJsonText(res: Response, status: number, text: string): void {
  // setHeader, not Express' set, which appends a charset to a JSON type.
  res.status(status).setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** Sends `body` serialised as the node's gateway does (only string contents hold the escaped characters). */
export function sendGatewayJson(res: Response, status: number, body: Json, style: GatewayStyle): void {
  sendJsonText(res, status, JSON.stringify(body).replace(ESCAPED[style], unicodeEscape));
}
