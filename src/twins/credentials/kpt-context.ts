// The Hearth KPT JSON-LD context: every term a KPT credential uses beyond VC 2.0, each mapped to
// an IRI of one fixed vocabulary (https://w3id.org/hearth/kpt#<term>). The context has one URL
// and the same bytes in every deployment, so verifiers bundle it (the SDK ships a copy) and pin
// it: each credential names its digest (VC 2.0 relatedResource). Hearth serves the bytes too.
import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { base58btc } from 'multiformats/bases/base58';
import { create as createDigest } from 'multiformats/hashes/digest';
import { sha256 } from 'multiformats/hashes/sha2';

/** The context's URL in every credential's @context, the same in every deployment. */
export const KPT_CONTEXT_URL = 'https://w3id.org/hearth/kpt/v1';
/** Where this service serves the same bytes. */
export const KPT_CONTEXT_PATH = '/v1/contexts/kpt-v1.jsonld';

/** The context document, byte for byte as shipped (src/twins/credentials/contexts/kpt-v1.jsonld). */
export const KPT_CONTEXT_BYTES = readFileSync(new URL('./contexts/kpt-v1.jsonld', import.meta.url));

/** digestMultibase of the context: multibase base58btc of the sha2-256 multihash of its bytes. */
export const KPT_CONTEXT_DIGEST = base58btc.encode(createDigest(sha256.code, hash('sha256', KPT_CONTEXT_BYTES, 'buffer')).bytes);

/** Absolute base URL (no trailing slash) the service is reached at by third parties. */
export type PublicBase = string;
