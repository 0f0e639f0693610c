// Account effects: PIN checks with the attempt count and lock kept on the account (across
// sessions and instances), and account creation with the household twin (area A).
import { randomInt } from 'node:crypto';
import { inTransaction } from '../platform/db/sql.ts';
import { maskPhone } from '../platform/logging.ts';
import type { EffectResult, UssdContext } from './context.ts';
import type { Account } from './model.ts';
import { newId } from './repository.ts';
import type { EffectDeps } from './effect-deps.ts';

const MAX_PIN_ATTEMPTS = 3;
/** Far longer than counting and comparing one PIN takes: an attempt counted this long ago is settled. */
const PIN_CHECK_MS = 30_000;
/** Far longer than any creation takes: an account this old without a household was abandoned. */
const ABANDONED_ACCOUNT_MS = 60_000;
/** Customer IDs are 8 digits: short to read out and type, drawn at random so they cannot be guessed in order. */
const CUSTOMER_ID_MIN = 10_000_000;
const CUSTOMER_ID_MAX = 100_000_000;
const CUSTOMER_ID_TRIES = 5;

const newCustomerId = () => String(randomInt(CUSTOMER_ID_MIN, CUSTOMER_ID_MAX));

/** Constant-time PIN check with the attempt counter and lock stored on the account. */
export async function checkPin(deps: EffectDeps, accountId: string, pin: string): Promise<EffectResult> {
  const { repo, logger } = deps;
  const account = await repo.findAccount(accountId);
  if (!account) return { outcome: 'unknownCustomer' };
  if (account.lockedAt) return { outcome: 'locked' };
  const nowIso = deps.now().toISOString();
  // The attempt is counted before the PIN is compared: concurrent guesses (other sessions,
  // other instances) get no more than MAX_PIN_ATTEMPTS comparisons between them.
  const attempts = await repo.reservePinAttempt(account.id, MAX_PIN_ATTEMPTS, nowIso);
  if (attempts === undefined) return noAttemptLeft(deps, account.id);
  if (deps.pins.matches(account.sealedPin, pin)) {
    await repo.resetFailedPins(account.id, nowIso);
    return { outcome: 'ok' };
  }
  logger.warn({ customerId: account.customerId, attempts }, 'ussd wrong PIN');
  if (attempts >= MAX_PIN_ATTEMPTS) {
    await repo.lockAccount(account.id, nowIso);
    return { outcome: 'locked' };
  }
  return { outcome: 'retry', notice: { key: 'wrongPin', params: { left: MAX_PIN_ATTEMPTS - attempts } } };
}

/**
 * No attempt was left to count: the account is locked, or every attempt it had left is being
 * checked in other sessions (a correct PIN among them frees them again), and this one is asked
 * to try again. Attempts counted long ago and never settled (an instance died between the count
 * and the lock) lock the account now.
 */
async function noAttemptLeft(deps: EffectDeps, accountId: string): Promise<EffectResult> {
  const account = await deps.repo.findAccount(accountId);
  if (!account || account.lockedAt) return { outcome: 'locked' };
  const now = deps.now();
  if (now.getTime() - Date.parse(account.updatedAt) > PIN_CHECK_MS) {
    await deps.repo.lockAccount(account.id, now.toISOString());
    return { outcome: 'locked' };
  }
  return { outcome: 'retry', notice: { key: 'pinBusy' } };
}

/**
 * An account row without a household DID long after it was inserted is a creation that died
 * between the two (a crash: the compensating delete never ran). Its Customer ID was never
 * shown, so it is removed and the phone may create an account again. True if it was removed.
 */
async function removeAbandonedAccount(deps: EffectDeps, account: Account): Promise<boolean> {
  if (account.householdDid !== null || deps.now().getTime() - Date.parse(account.createdAt) < ABANDONED_ACCOUNT_MS) return false;
  const removed = await deps.repo.deleteUnfinishedAccount(account.id);
  if (removed) deps.logger.warn({ customerId: account.customerId, phone: maskPhone(account.phoneNumber) }, 'ussd removed an account whose creation never finished');
  return removed;
}

/** Whether `phone` may create an account: it has none, or only an abandoned creation (removed now). */
export async function phoneIsFree(deps: EffectDeps, phone: string): Promise<boolean> {
  const existing = await deps.repo.findAccountByPhone(phone);
  return !existing || (await removeAbandonedAccount(deps, existing));
}

/**
 * The household registration, a use case spanning area A (the twin entity) and area B (the
 * account's link to it): it owns its unit of work, one transaction in which area A checks the
 * twin, the link is stored, then area A stores the twin (the link before the twin's insert takes
 * its table's seq turn, held to the commit). It lives in area B, which starts it and whose
 * writes it holds; area A is reached only through the port.
 */
function registerHousehold(
  { db, repo, twins }: EffectDeps,
  { accountId, name, village, customerId, at }: { accountId: string; name: string; village: string | null; customerId: string; at: string },
): Promise<{ did: string }> {
  return inTransaction(db, async (trx) => {
    const household = await twins.newHousehold(trx, { name, village, customerId });
    await repo.setHouseholdDid(trx, accountId, household.did, at);
    await household.store(trx);
    return { did: household.did };
  });
}

/** Creates the account from the session's draft once the PIN is confirmed, then its household twin. */
export async function createAccount(deps: EffectDeps, c: UssdContext, confirmPin: string, phone: string): Promise<EffectResult> {
  const { repo, pins, logger } = deps;
  const { draft } = c;
  if (!draft.sealedPin || !pins.matches(draft.sealedPin, confirmPin)) return { outcome: 'mismatch' };
  if (!(await phoneIsFree(deps, phone))) return { outcome: 'phoneTaken' };
  const nowIso = deps.now().toISOString();
  for (let attempt = 0; attempt < CUSTOMER_ID_TRIES; attempt++) {
    const customerId = newCustomerId();
    if (await repo.findAccountByCustomerId(customerId)) continue;
    const accountId = newId();
    const inserted = await repo.insertAccount({
      id: accountId,
      customerId,
      phoneNumber: phone,
      name: draft.name!,
      village: draft.village ?? null,
      testGroup: draft.testGroup!,
      language: c.lang,
      // Re-sealed with a fresh IV: the draft's ciphertext lived in session state.
      sealedPin: pins.seal(confirmPin),
      createdAt: nowIso,
    });
    if (!inserted) {
      // Another session took the phone meanwhile, or the Customer ID: then another one is drawn.
      if (await repo.findAccountByPhone(phone)) return { outcome: 'phoneTaken' };
      continue;
    }
    // The household twin only once the account row holds its customer id and phone: a
    // unique-key retry above never leaves a household behind. The twin and the account's link
    // to it commit together, and a failure removes the row.
    let household: { did: string };
    try {
      household = await registerHousehold(deps, { accountId, name: draft.name!, village: draft.village ?? null, customerId, at: nowIso });
    } catch (err) {
      await repo.deleteAccount(accountId).catch((e: unknown) => logger.error({ err: e, customerId }, 'ussd could not remove a half-created account'));
      throw err;
    }
    logger.info({ customerId, householdDid: household.did, phone: maskPhone(phone) }, 'ussd account created');
    return { outcome: 'ok', assign: { customerId } };
  }
  throw new Error('could not allocate a unique customer id');
}
