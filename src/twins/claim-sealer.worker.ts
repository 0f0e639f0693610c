// The sealer thread (claim-sealer.ts): seals claims with the validator key it was started with.
import { parentPort, workerData } from 'node:worker_threads';
import { sealClaim, type SealInput } from './claim-seal.ts';
import type { ValidatorKey } from './validator-key.ts';

const key = (workerData as { key: ValidatorKey }).key;
const port = parentPort!;

port.on('message', ({ n, input }: { n: number; input: SealInput }) => {
  try {
    port.postMessage({ n, seal: sealClaim(input, key) });
  } catch (err) {
    port.postMessage({ n, error: String(err) });
  }
});
port.postMessage({ ready: true });
