// Area B's narrow view of area A (households as twin entities, KPT claims), until area A's
// services are merged: every call answers 503, which the gateway renders as
// `END Service temporarily unavailable...`.
import { unavailable } from '../platform/http/errors.ts';
import type { UssdTwinsPort } from './service.ts';

export const twinsNotConnected: UssdTwinsPort = {
  createHousehold: async () => {
    throw unavailable('the twins area is not connected');
  },
  submitKptClaim: async () => {
    throw unavailable('the twins area is not connected');
  },
  latestClaim: async () => {
    throw unavailable('the twins area is not connected');
  },
};
