// The sealer thread (claim-sealer.ts): seals claims, or the credentials of claims verified
// later, with the validator key it was started with.
import { parentPort, workerData } from 'node:worker_threads';
import { sealClaim, sealCredential, type CredentialInput, type SealInput } from './claim-seal.ts';
import type { ValidatorKey } from './validator-key.ts';

const key = (workerData as { key: ValidatorKey }).key;
const port = parentPort!;

port.on('message', (request: { n: number; input: SealInput } | { n: number; credential: CredentialInput }) => {
  const { n } = request;
  try {
    port.postMessage({ n, result: 'input' in request ? sealClaim(request.input, key) : sealCredential(request.credential, key) });
  } catch (err) {
    port.postMessage({ n, error: String(err) });
  }
});
port.postMessage({ ready: true });
