// The only SQL of area B: sessions, accounts and fuel logs, the same code on SQLite and
// PostgreSQL. A session is read and written on every keypress, so those statements are plain
// SQL (platform/db/sql.ts); the rest is Knex.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation, type Db } from '../platform/db/index.ts';
import { insertInto, sqlOf, updateWhere, type Sql } from '../platform/db/sql.ts';

export interface SessionRow {
  id: string;
  phone_number: string;
  service_code: string;
  snapshot: string;
  state: string;
  is_authenticated: boolean | number;
  /** Keyed digest of the last processed text (never the text: it holds the PINs typed). */
  last_text_digest: string;
  last_text_length: number;
  last_reply: string | null;
  status: 'active' | 'closed' | 'expired';
  version: number;
  created_at: string;
  updated_at: string;
  expires_at: string;
  /** The mobile network the gateway named (Africa's Talking `networkCode`). */
  network_code?: string | null;
  /** From the gateway's end-of-session notification. */
  end_status?: string | null;
  end_duration_ms?: number | null;
  end_error?: string | null;
  ended_at?: string | null;
}

/** The gateway's end-of-session notification, as recorded on the session. */
export type SessionEnd = Required<Pick<SessionRow, 'end_status' | 'end_duration_ms' | 'end_error' | 'ended_at'>>;

export interface AccountRow {
  id: string;
  customer_id: string;
  phone_number: string;
  name: string;
  village: string | null;
  test_group: 'reference' | 'intervention';
  /** Code of the catalogue the household reads (en, sw). */
  language: string;
  household_did: string | null;
  pin_encrypted: string;
  failed_pin_attempts: number;
  locked_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface FuelLogRow {
  id: string;
  account_id: string;
  log_date: string;
  kg: number;
  claim_id: string | null;
}

export const newId = () => randomBytes(16).toString('hex');

export class UssdRepository {
  private readonly sql: Sql;

  constructor(private readonly db: Db) {
    this.sql = sqlOf(db);
  }

  // ---- sessions --------------------------------------------------------------------------
  findSession(id: string): Promise<SessionRow | undefined> {
    return this.sql.one<SessionRow>('select * from ussd_sessions where id = ?', [id]);
  }

  /** Inserts a new session; a unique violation when another instance inserted the same id first. */
  async insertSession(row: SessionRow): Promise<void> {
    await this.sql.run(...insertInto('ussd_sessions', { ...row }));
  }

  /** Updates only when the row still has `version`; false when another hop got there first. */
  async updateSession(id: string, version: number, changes: Partial<SessionRow>): Promise<boolean> {
    return (await this.sql.run(...updateWhere('ussd_sessions', changes, { id, version }))) === 1;
  }

  /** Records the gateway's end-of-session notification; false when no session has this id (any more). */
  async recordSessionEnd(id: string, end: SessionEnd): Promise<boolean> {
    return (await this.sql.run(...updateWhere('ussd_sessions', end, { id }))) === 1;
  }

  async deleteSession(id: string, version: number): Promise<boolean> {
    return (await this.sql.run('delete from ussd_sessions where id = ? and version = ?', [id, version])) === 1;
  }

  async activeSessionIds(now: string): Promise<string[]> {
    const rows = await this.db('ussd_sessions')
      .where({ status: 'active' })
      .andWhere('expires_at', '>', now)
      .orderBy('created_at')
      .select('id');
    return rows.map((r: { id: string }) => r.id);
  }

  /** Removes closed sessions whose expiry is at or before `closedBy`, and any expiring at or before `expiredBy`; returns how many. */
  sweepSessions(closedBy: string, expiredBy: string): Promise<number> {
    return this.db('ussd_sessions')
      .where((q) => q.where({ status: 'closed' }).andWhere('expires_at', '<=', closedBy))
      .orWhere('expires_at', '<=', expiredBy)
      .delete();
  }

  // ---- accounts ---------------------------------------------------------------------------
  findAccountByCustomerId(customerId: string): Promise<AccountRow | undefined> {
    return this.db<AccountRow>('ussd_accounts').where({ customer_id: customerId }).first();
  }

  findAccount(id: string): Promise<AccountRow | undefined> {
    return this.db<AccountRow>('ussd_accounts').where({ id }).first();
  }

  findAccountByPhone(phone: string): Promise<AccountRow | undefined> {
    return this.db<AccountRow>('ussd_accounts').where({ phone_number: phone }).first();
  }

  async insertAccount(row: AccountRow): Promise<void> {
    await this.db('ussd_accounts').insert(row);
  }

  async deleteAccount(id: string): Promise<void> {
    await this.db('ussd_accounts').where({ id }).delete();
  }

  /** Deletes an account whose creation never finished (no household DID); false if it has one by now. */
  async deleteUnfinishedAccount(id: string): Promise<boolean> {
    return (await this.db('ussd_accounts').where({ id }).whereNull('household_did').delete()) === 1;
  }

  /**
   * Counts a PIN attempt before the PIN is compared, in one conditional statement: an account
   * that is locked, or has `maxAttempts` counted already (concurrent guesses included), gets no
   * attempt (undefined). Otherwise the attempt's number, 1-based.
   */
  async reservePinAttempt(id: string, maxAttempts: number, now: string): Promise<number | undefined> {
    return this.db.transaction(async (trx: Knex.Transaction) => {
      const counted = await trx('ussd_accounts')
        .where({ id })
        .whereNull('locked_at')
        .andWhere('failed_pin_attempts', '<', maxAttempts)
        .increment('failed_pin_attempts', 1)
        .update({ updated_at: now });
      if (counted !== 1) return undefined;
      const row = await trx<AccountRow>('ussd_accounts').where({ id }).first();
      return row!.failed_pin_attempts;
    });
  }

  async lockAccount(id: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where({ id }).whereNull('locked_at').update({ locked_at: now, updated_at: now });
  }

  async resetFailedPins(id: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where({ id }).andWhere('failed_pin_attempts', '>', 0).update({ failed_pin_attempts: 0, updated_at: now });
  }

  /** Clears the lock and the failed-PIN count; false when no account has this Customer ID. */
  async unlockAccount(customerId: string, now: string): Promise<boolean> {
    const n = await this.db('ussd_accounts').where({ customer_id: customerId }).update({ locked_at: null, failed_pin_attempts: 0, updated_at: now });
    return n === 1;
  }

  async setLanguage(where: { id: string } | { phone_number: string }, language: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where(where).update({ language, updated_at: now });
  }

  async updatePin(id: string, pinEncrypted: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where({ id }).update({ pin_encrypted: pinEncrypted, failed_pin_attempts: 0, updated_at: now });
  }

  /** The claim id behind a short reference a household was shown. */
  async claimIdForRef(ref: string): Promise<string | undefined> {
    return (await this.sql.one<{ claim_id: string }>('select claim_id from ussd_claim_refs where ref = ?', [ref]))?.claim_id;
  }

  // ---- fuel logs -----------------------------------------------------------------------------
  /**
   * Records the day's reading: `saved`, `updated` (an earlier reading that day replaced) or
   * `claimed` (the day is already in a submitted claim and stays as claimed).
   */
  async upsertFuelLog(accountId: string, date: string, kg: number, now: string): Promise<'saved' | 'updated' | 'claimed'> {
    const once = () =>
      this.db.transaction(async (trx: Knex.Transaction) => {
        const existing = await trx<FuelLogRow>('ussd_fuel_logs').where({ account_id: accountId, log_date: date }).first();
        if (existing?.claim_id) return 'claimed' as const;
        if (existing) {
          // A claim may have taken the day since it was read: then nothing is written.
          const updated = await trx('ussd_fuel_logs').where({ id: existing.id }).whereNull('claim_id').update({ kg, updated_at: now });
          return updated === 1 ? ('updated' as const) : ('claimed' as const);
        }
        await trx('ussd_fuel_logs').insert({ id: newId(), account_id: accountId, log_date: date, kg, claim_id: null, created_at: now, updated_at: now });
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

  /** Frees the days a claim that was not accepted used, so they can be sent again. */
  async releaseFuelLogs(accountId: string, claimId: string, now: string): Promise<number> {
    return this.db('ussd_fuel_logs').where({ account_id: accountId, claim_id: claimId }).update({ claim_id: null, updated_at: now });
  }

  async fuelLogs(accountId: string): Promise<FuelLogRow[]> {
    const rows = await this.db<FuelLogRow>('ussd_fuel_logs').where({ account_id: accountId }).orderBy('log_date').select('id', 'account_id', 'log_date', 'kg', 'claim_id');
    return rows.map((r) => ({ ...r, kg: Number(r.kg) }));
  }
}

/**
 * Records an account's household DID, in the household twin's own transaction (area A's
 * `storeWithEntity`). Throws if the account has gone meanwhile (removed as abandoned), which
 * undoes the twin too.
 */
export async function setHouseholdDid(sql: Sql, accountId: string, did: string, now: string): Promise<void> {
  const updated = await sql.run('update ussd_accounts set household_did = ?, updated_at = ? where id = ? and household_did is null', [did, now, accountId]);
  if (updated !== 1) throw new Error(`account ${accountId} disappeared before its household was set`);
}

/**
 * Marks the readings a claim used, in the claim's own transaction (area A's `storeWithClaim`).
 * False when any of them has changed, or gone to another claim, since it was read: then the
 * claim would hold values its days no longer have. Marking again for the same claim is true.
 */
export async function markFuelLogsClaimed(sql: Sql, logs: Pick<FuelLogRow, 'id' | 'kg'>[], claimId: string, now: string): Promise<boolean> {
  let marked = 0;
  for (const log of logs) {
    marked += await sql.run(
      'update ussd_fuel_logs set claim_id = ?, updated_at = ? where id = ? and kg = ? and (claim_id is null or claim_id = ?)',
      [claimId, now, log.id, log.kg, claimId],
    );
  }
  return marked === logs.length;
}

/** Records a claim's short reference, in the claim's own transaction; again for the same claim is a no-op. */
export async function storeClaimRef(sql: Sql, ref: string, claimId: string, accountId: string, now: string): Promise<void> {
  if (await sql.one('select ref from ussd_claim_refs where claim_id = ?', [claimId])) return;
  await sql.run(...insertInto('ussd_claim_refs', { ref, claim_id: claimId, account_id: accountId, created_at: now }));
}
