// Checks a webhook Hearth sent (Standard Webhooks: webhook-id, webhook-timestamp and
// webhook-signature headers, an HMAC-SHA256 of `id.timestamp.body`) before its payload is trusted.
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { Event } from '../../generated/openapi/types.gen.js';

/** A webhook whose signature, timestamp (within 5 minutes) or headers do not check out: it is not Hearth's, or was altered or replayed. */
export class HearthWebhookError extends Error {
  override readonly name = 'HearthWebhookError';
}

/** Headers as a fetch Headers, a Node.js request's headers (IncomingHttpHeaders) or a plain record. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

/**
 * The event a webhook carries, once its signature is checked against the endpoint's secret
 * (`whsec_...`, as given when the endpoint was registered). `payload` is the body exactly as
 * received (a string or the raw bytes; never a parsed and re-serialised object). Throws
 * HearthWebhookError when it does not verify.
 */
export function verifyWebhook<TEvent = Event>(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): TEvent {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  try {
    return new Webhook(secret).verify(body, headerRecord(headers)) as TEvent;
  } catch (err) {
    if (err instanceof WebhookVerificationError) throw new HearthWebhookError(err.message, { cause: err });
    throw err;
  }
}
