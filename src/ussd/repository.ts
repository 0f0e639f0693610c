// The only SQL of area B: sessions, accounts and fuel logs, the same code on SQLite and
// PostgreSQL, mapped to and from the area's types (model.ts).
import { randomBytes } from 'node:crypto';
import { isUniqueViolation, type Db } from '../platform/db/index.ts';
import { inTransaction, type Sql } from '../platform/db/sql.ts';
import type { TestGroup } from '../../generated/openapi/types.gen.ts';
import type { UssdAccounts, UssdFuelLogs, UssdSessions } from '../../generated/db/tables.ts';
import type { Language } from './i18n/index.ts';
import type { Account, FuelLog, NewAccount, Session, SessionChanges, SessionEnd, SessionStatus } from './model.ts';

/** Sessions removed by one transaction of the sweep: each statement stays well under SQLite's bound parameters. */
const SWEEP_BATCH = 500;

const toSession = (r: UssdSessions): Session => ({
  id: r.id,
  phoneNumber: r.phone_number,
  serviceCode: r.service_code,
  snapshot: r.snapshot,
  state: r.state,
  isAuthenticated: Boolean(r.is_authenticated),
  lastText: { digest: r.last_text_digest, length: r.last_text_length, earlier: r.last_text_earlier },
  lastReply: r.last_reply,
  status: r.status as SessionStatus,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
  networkCode: r.network_code ?? null,
});

/** The columns a change sets (Knex leaves the undefined ones out of the statement). */
const sessionColumns = (c: SessionChanges) => ({
  snapshot: c.snapshot,
  state: c.state,
  is_authenticated: c.isAuthenticated,
  last_text_digest: c.lastText?.digest,
  last_text_length: c.lastText?.length,
  last_text_earlier: c.lastText?.earlier,
  last_reply: c.lastReply,
  status: c.status,
  version: c.version,
  updated_at: c.updatedAt,
  expires_at: c.expiresAt,
});

const toAccount = (r: UssdAccounts): Account => ({
  id: r.id,
  customerId: r.customer_id,
  phoneNumber: r.phone_number,
  name: r.name,
  village: r.village,
  testGroup: r.test_group as TestGroup,
  language: r.language,
  householdDid: r.household_did,
  sealedPin: r.pin_encrypted,
  failedPinAttempts: r.failed_pin_attempts,
  lockedAt: r.locked_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

// PostgreSQL returns numeric columns as strings.
const toFuelLog = (r: Pick<UssdFuelLogs, 'id' | 'log_date' | 'kg' | 'claim_id'>): FuelLog => ({ id: r.id, date: r.log_date, kg: Number(r.kg), claimId: r.claim_id });

export const newId = () => randomBytes(16).toString('hex');

/** Runs the insert; false when a unique key it sets is taken already. */
async function insertedUnlessTaken(insert: () => Promise<unknown>): Promise<boolean> {
  try {
    await insert();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

export class UssdRepository {
  constructor(private readonly db: Db) {}

  // ---- sessions --------------------------------------------------------------------------
  async findSession(id: string): Promise<Session | undefined> {
    const row = await this.db('ussd_sessions').where('id', id).first();
    return row && toSession(row);
  }

  /** Inserts a new session; false when another hop (or instance) inserted the same id first. */
  async insertSession(s: Session): Promise<boolean> {
    return insertedUnlessTaken(() =>
      this.db('ussd_sessions').insert({
        id: s.id,
        phone_number: s.phoneNumber,
        service_code: s.serviceCode,
        snapshot: s.snapshot,
        state: s.state,
        is_authenticated: s.isAuthenticated,
        last_text_digest: s.lastText.digest,
        last_text_length: s.lastText.length,
        last_text_earlier: s.lastText.earlier,
        last_reply: s.lastReply,
        status: s.status,
        version: s.version,
        created_at: s.createdAt,
        updated_at: s.updatedAt,
        expires_at: s.expiresAt,
        network_code: s.networkCode,
      }),
    );
  }

  /** Updates only when the row still has `version`; false when another hop got there first. */
  async updateSession(id: string, version: number, changes: SessionChanges): Promise<boolean> {
    return (await this.db('ussd_sessions').where('id', id).where('version', version).update(sessionColumns(changes))) === 1;
  }

  /**
   * Records the gateway's end-of-session notification, closing a session still active: the
   * network has ended it, so a later hop is not served in it. False when no session has this id
   * (any more).
   */
  async recordSessionEnd(id: string, phoneNumber: string | undefined, end: SessionEnd): Promise<boolean> {
    const updated = await this.db('ussd_sessions')
      .where('id', id)
      .modify((q) => {
        if (phoneNumber !== undefined) q.where('phone_number', phoneNumber);
      })
      .update({
        end_status: end.status,
        end_duration_ms: end.durationMs,
        end_error: end.error,
        ended_at: end.endedAt,
        status: this.db.raw("case when status = 'active' then 'closed' else status end"),
      })
      .increment('version', 1);
    return updated === 1;
  }

  async deleteSession(id: string, version: number): Promise<boolean> {
    return (await this.db('ussd_sessions').where('id', id).where('version', version).del()) === 1;
  }

  async activeSessionIds(now: string): Promise<string[]> {
    const rows = await this.db('ussd_sessions').select('id').where('status', 'active').where('expires_at', '>', now).orderBy('created_at');
    return rows.map((r) => r.id);
  }

  /**
   * Removes closed sessions whose expiry is at or before `closedBy`, and any expiring at or before
   * `expiredBy`, each leaving its id, service code and language (`languageOf` its snapshot) among
   * the swept sessions; forgets those swept at or before `forgetBy`. Returns how many it removed.
   */
  async sweepSessions(
    { closedBy, expiredBy, forgetBy, now }: { closedBy: string; expiredBy: string; forgetBy: string; now: string },
    languageOf: (snapshot: string) => Language,
  ): Promise<number> {
    let removed = 0;
    for (;;) {
      const swept = await inTransaction(this.db, async (sql) => {
        const rows = await sql('ussd_sessions')
          .select('id', 'service_code', 'snapshot')
          .where((q) => {
            q.where('status', 'closed').where('expires_at', '<=', closedBy);
          })
          .orWhere('expires_at', '<=', expiredBy)
          .limit(SWEEP_BATCH);
        if (!rows.length) return 0;
        await sql('ussd_swept_sessions')
          .insert(rows.map((r) => ({ id: r.id, service_code: r.service_code, language: languageOf(r.snapshot), swept_at: now })))
          .onConflict('id')
          .merge(['service_code', 'language', 'swept_at']);
        await sql('ussd_sessions').whereIn('id', rows.map((r) => r.id)).del();
        return rows.length;
      });
      removed += swept;
      if (swept < SWEEP_BATCH) break;
    }
    await this.db('ussd_swept_sessions').where('swept_at', '<=', forgetBy).del();
    return removed;
  }

  /** A session the sweep removed (and has not forgotten yet): what its expired reply needs. */
  async findSweptSession(id: string): Promise<{ serviceCode: string; language: Language } | undefined> {
    const row = await this.db('ussd_swept_sessions').select('service_code', 'language').where('id', id).first();
    return row && { serviceCode: row.service_code, language: row.language as Language };
  }

  // ---- accounts ---------------------------------------------------------------------------
  private async account(column: 'id' | 'customer_id' | 'phone_number', value: string): Promise<Account | undefined> {
    const row = await this.db('ussd_accounts').where(column, value).first();
    return row && toAccount(row);
  }

  findAccountByCustomerId(customerId: string): Promise<Account | undefined> {
    return this.account('customer_id', customerId);
  }

  /** The sealed PIN of the newest account, if there is one (the start-up key check). */
  async newestSealedPin(): Promise<string | undefined> {
    const row = await this.db('ussd_accounts').select('pin_encrypted').orderBy('created_at', 'desc').first();
    return row?.pin_encrypted;
  }

  findAccount(id: string): Promise<Account | undefined> {
    return this.account('id', id);
  }

  findAccountByPhone(phone: string): Promise<Account | undefined> {
    return this.account('phone_number', phone);
  }

  /** Inserts an account without its household yet; false when its phone number or Customer ID is taken. */
  async insertAccount(a: NewAccount): Promise<boolean> {
    return insertedUnlessTaken(() =>
      this.db('ussd_accounts').insert({
        id: a.id,
        customer_id: a.customerId,
        phone_number: a.phoneNumber,
        name: a.name,
        village: a.village,
        test_group: a.testGroup,
        language: a.language,
        household_did: null,
        pin_encrypted: a.sealedPin,
        failed_pin_attempts: 0,
        locked_at: null,
        created_at: a.createdAt,
        updated_at: a.createdAt,
      }),
    );
  }

  async deleteAccount(id: string): Promise<void> {
    await this.db('ussd_accounts').where('id', id).del();
  }

  /** Deletes an account whose creation never finished (no household DID); false if it has one by now. */
  async deleteUnfinishedAccount(id: string): Promise<boolean> {
    return (await this.db('ussd_accounts').where('id', id).whereNull('household_did').del()) === 1;
  }

  /**
   * Counts a PIN attempt before the PIN is compared, in one conditional statement: an account
   * that is locked, or has `maxAttempts` counted already (concurrent guesses included), gets no
   * attempt (undefined). Otherwise the attempt's number, 1-based.
   */
  reservePinAttempt(id: string, maxAttempts: number, now: string): Promise<number | undefined> {
    return inTransaction(this.db, async (sql) => {
      const counted = await sql('ussd_accounts')
        .where('id', id)
        .whereNull('locked_at')
        .where('failed_pin_attempts', '<', maxAttempts)
        .update({ updated_at: now })
        .increment('failed_pin_attempts', 1);
      if (counted !== 1) return undefined;
      const row = await sql('ussd_accounts').select('failed_pin_attempts').where('id', id).first();
      return row!.failed_pin_attempts;
    });
  }

  async lockAccount(id: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where('id', id).whereNull('locked_at').update({ locked_at: now, updated_at: now });
  }

  async resetFailedPins(id: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where('id', id).where('failed_pin_attempts', '>', 0).update({ failed_pin_attempts: 0, updated_at: now });
  }

  /** Clears the lock and the failed-PIN count; false when no account has this Customer ID. */
  async unlockAccount(customerId: string, now: string): Promise<boolean> {
    return (await this.db('ussd_accounts').where('customer_id', customerId).update({ locked_at: null, failed_pin_attempts: 0, updated_at: now })) === 1;
  }

  /** A new PIN, the lock and the failed-PIN count cleared; false when no account has this Customer ID. */
  async resetPin(customerId: string, sealedPin: string, now: string): Promise<boolean> {
    const updated = await this.db('ussd_accounts').where('customer_id', customerId).update({ pin_encrypted: sealedPin, locked_at: null, failed_pin_attempts: 0, updated_at: now });
    return updated === 1;
  }

  async setLanguage(account: { id: string } | { phoneNumber: string }, language: Language, now: string): Promise<void> {
    const [column, value] = 'id' in account ? (['id', account.id] as const) : (['phone_number', account.phoneNumber] as const);
    await this.db('ussd_accounts').where(column, value).update({ language, updated_at: now });
  }

  async updatePin(id: string, sealedPin: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where('id', id).update({ pin_encrypted: sealedPin, failed_pin_attempts: 0, updated_at: now });
  }

  /** The claim id behind a short reference a household was shown. */
  async claimIdForRef(ref: string): Promise<string | undefined> {
    return (await this.db('ussd_claim_refs').select('claim_id').where('ref', ref).first())?.claim_id;
  }

  // ---- fuel logs -----------------------------------------------------------------------------
  /**
   * Records the day's reading: `saved`, `updated` (an earlier reading that day replaced) or
   * `claimed` (the day is already in a submitted claim and stays as claimed).
   */
  async upsertFuelLog(accountId: string, date: string, kg: number, now: string): Promise<'saved' | 'updated' | 'claimed'> {
    const once = () =>
      inTransaction(this.db, async (sql) => {
        const existing = await sql('ussd_fuel_logs').select('id', 'claim_id').where('account_id', accountId).where('log_date', date).first();
        if (existing?.claim_id) return 'claimed' as const;
        if (existing) {
          // A claim may have taken the day since it was read: then nothing is written.
          const updated = await sql('ussd_fuel_logs').where('id', existing.id).whereNull('claim_id').update({ kg, updated_at: now });
          return updated === 1 ? ('updated' as const) : ('claimed' as const);
        }
        await sql('ussd_fuel_logs').insert({ id: newId(), account_id: accountId, log_date: date, kg, claim_id: null, created_at: now, updated_at: now });
        return 'saved' as const;
      });
    try {
      return await once();
    } catch (err) {
      // Another session saved the day's first reading meanwhile: this one updates it.
      if (isUniqueViolation(err)) return once();
      throw err;
    }
  }

  /**
   * Records an account's household DID, in the household registration's transaction
   * (accounts.ts). Throws if the account has gone meanwhile (removed as abandoned), which undoes
   * the twin too.
   */
  async setHouseholdDid(trx: Sql, accountId: string, did: string, now: string): Promise<void> {
    const updated = await trx('ussd_accounts').where('id', accountId).whereNull('household_did').update({ household_did: did, updated_at: now });
    if (updated !== 1) throw new Error(`account ${accountId} disappeared before its household was set`);
  }

  /** Frees the days a claim that was not accepted used, so they can be sent again. */
  async releaseFuelLogs(accountId: string, claimId: string, now: string): Promise<number> {
    return await this.db('ussd_fuel_logs').where('account_id', accountId).where('claim_id', claimId).update({ claim_id: null, updated_at: now });
  }

  /** Whether the account's reading of `date` is in a sent claim. */
  async fuelDayClaimed(accountId: string, date: string): Promise<boolean> {
    const row = await this.db('ussd_fuel_logs').select('claim_id').where('account_id', accountId).where('log_date', date).first();
    return !!row?.claim_id;
  }

  /** The account's logged days, oldest first. */
  async fuelLogs(accountId: string): Promise<FuelLog[]> {
    const rows = await this.db('ussd_fuel_logs').select('id', 'log_date', 'kg', 'claim_id').where('account_id', accountId).orderBy('log_date');
    return rows.map(toFuelLog);
  }
}

/**
 * Marks the readings a claim used, in the claim's own transaction (the claim submission, claims.ts).
 * False when any of them has changed, or gone to another claim, since it was read: then the
 * claim would hold values its days no longer have. Marking again for the same claim is true.
 */
export async function markFuelLogsClaimed(sql: Sql, logs: Pick<FuelLog, 'id' | 'kg'>[], claimId: string, now: string): Promise<boolean> {
  let marked = 0;
  for (const log of logs) {
    marked += await sql('ussd_fuel_logs')
      .where('id', log.id)
      .where('kg', log.kg)
      .where((q) => {
        q.whereNull('claim_id').orWhere('claim_id', claimId);
      })
      .update({ claim_id: claimId, updated_at: now });
  }
  return marked === logs.length;
}

/** Records a claim's short reference, in the claim's own transaction; again for the same claim is a no-op. */
export async function storeClaimRef(sql: Sql, ref: string, claimId: string, accountId: string, now: string): Promise<void> {
  if (await sql('ussd_claim_refs').select('ref').where('claim_id', claimId).first()) return;
  await sql('ussd_claim_refs').insert({ ref, claim_id: claimId, account_id: accountId, created_at: now });
}
