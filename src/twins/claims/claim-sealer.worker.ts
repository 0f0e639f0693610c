// The sealer thread (claim-sealer.ts): seals claims, or the credentials of claims verified
// later, with the validator key it was started with.
import { parentPort, workerData } from 'node:worker_threads';
import { sealClaim, sealCredential } from './claim-seal.ts';
import { REPLY_SIZE, type Batch, type Reply } from './claim-sealer.ts';
import type { ValidatorKey } from '../credentials/validator-key.ts';

const key = (workerData as { key: ValidatorKey }).key;
const port = parentPort!;

/** A batch of requests (ClaimSealer.flush), answered in order, REPLY_SIZE a message. */
port.on('message', (batch: Batch) => {
  for (let start = 0; start < batch.length; start += REPLY_SIZE) {
    const replies: Reply = batch.slice(start, start + REPLY_SIZE).map((request) => {
      const { n } = request;
      try {
        return { n, result: 'input' in request ? sealClaim(request.input, key) : sealCredential(request.credential, key) };
      } catch (err) {
        return { n, error: String(err) };
      }
    });
    port.postMessage(replies);
  }
});
port.postMessage({ ready: true });
