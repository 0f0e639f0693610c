// What the menu machine's effects are given to work with (effects.ts, and the use cases in
// accounts.ts and claims.ts), apart from effects.ts, which calls those use cases.
import type { Db } from '../platform/db/index.ts';
import type { Logger } from '../platform/logging.ts';
import type { PinCipher } from './pin.ts';
import type { UssdRepository } from './repository.ts';
import type { UssdTwinsPort } from './twins-port.ts';

export interface EffectDeps {
  /** The database the use cases spanning area A open their units of work on (accounts.ts, claims.ts). */
  db: Db;
  repo: UssdRepository;
  pins: PinCipher;
  twins: UssdTwinsPort;
  logger: Logger;
  now: () => Date;
  /** IANA zone of the users' calendar day (fuel is logged for "today" there). */
  timeZone?: string;
  /** Fuel amounts (kg a day) outside this range are saved only once the household confirms them. */
  plausibleKg?: { min: number; max: number };
}
