// The Hearth KPT JSON-LD context: every term a KPT credential uses beyond VC 2.0, each mapped to
// a vocabulary URL. The shipped file (contexts/kpt-v1.jsonld) names the vocabulary with a
// placeholder under the reserved .invalid domain; the service serves it with its own public
// URL instead, so every term resolves to `<context URL>#<term>` of the deployment that issued it.
import { readFileSync } from 'node:fs';

/** Where the context is served, under the public base URL. */
export const KPT_CONTEXT_PATH = '/v1/contexts/kpt-v1.jsonld';
const PLACEHOLDER_VOCAB = 'https://hearth.invalid/v1/contexts/kpt-v1.jsonld#';

const shipped = readFileSync(new URL('./contexts/kpt-v1.jsonld', import.meta.url), 'utf8');

/** Absolute base URL (no trailing slash) the service is reached at by third parties. */
export type PublicBase = string;

export const kptContextUrl = (base: PublicBase) => `${base}${KPT_CONTEXT_PATH}`;

/** The context document as served by the deployment at `base` (JSON text). */
export function kptContextDocument(base: PublicBase): string {
  return shipped.replace(PLACEHOLDER_VOCAB, `${kptContextUrl(base)}#`);
}
