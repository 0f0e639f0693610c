// The only SQL of area B: sessions, accounts and fuel logs, the same code on SQLite and
// PostgreSQL, mapped to and from the area's types (model.ts). A session is read and written on
// every keypress, so those statements are plain SQL (platform/db/sql.ts); the rest is Knex.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation, type Db } from '../platform/db/index.ts';
import { insertInto, sqlOf, updateWhere, type Sql } from '../platform/db/sql.ts';
import type { TestGroup } from '../../generated/openapi/types.gen.ts';
import type { Language } from './i18n/index.ts';
import type { Account, FuelLog, NewAccount, Session, SessionChanges, SessionEnd, SessionStatus } from './model.ts';

/** A row of ussd_sessions. */
interface SessionRow {
  id: string;
  phone_number: string;
  service_code: string;
  snapshot: string;
  state: string;
  is_authenticated: boolean | number;
  last_text_digest: string;
  last_text_length: number;
  last_reply: string | null;
  status: SessionStatus;
  version: number;
  created_at: string;
  updated_at: string;
  expires_at: string;
  network_code: string | null;
}

interface AccountRow {
  id: string;
  customer_id: string;
  phone_number: string;
  name: string;
  village: string | null;
  test_group: TestGroup;
  language: string;
  household_did: string | null;
  pin_encrypted: string;
  failed_pin_attempts: number;
  locked_at: string | null;
  created_at: string;
  updated_at: string;
}

interface FuelLogRow {
  id: string;
  account_id: string;
  log_date: string;
  kg: number | string;
  claim_id: string | null;
}

const toSession = (r: SessionRow): Session => ({
  id: r.id,
  phoneNumber: r.phone_number,
  serviceCode: r.service_code,
  snapshot: r.snapshot,
  state: r.state,
  isAuthenticated: Boolean(r.is_authenticated),
  lastText: { digest: r.last_text_digest, length: r.last_text_length },
  lastReply: r.last_reply,
  status: r.status,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
  networkCode: r.network_code ?? null,
});

/** The columns a change sets (undefined ones are left out of the statement). */
const sessionColumns = (c: SessionChanges) => ({
  snapshot: c.snapshot,
  state: c.state,
  is_authenticated: c.isAuthenticated,
  last_text_digest: c.lastText?.digest,
  last_text_length: c.lastText?.length,
  last_reply: c.lastReply,
  status: c.status,
  version: c.version,
  updated_at: c.updatedAt,
  expires_at: c.expiresAt,
});

const toAccount = (r: AccountRow): Account => ({
  id: r.id,
  customerId: r.customer_id,
  phoneNumber: r.phone_number,
  name: r.name,
  village: r.village,
  testGroup: r.test_group,
  language: r.language,
  householdDid: r.household_did,
  sealedPin: r.pin_encrypted,
  failedPinAttempts: r.failed_pin_attempts,
  lockedAt: r.locked_at,
  createdAt: r.created_at,
});

// PostgreSQL returns numeric columns as strings.
const toFuelLog = (r: Omit<FuelLogRow, 'account_id'>): FuelLog => ({ id: r.id, date: r.log_date, kg: Number(r.kg), claimId: r.claim_id });

export const newId = () => randomBytes(16).toString('hex');

export class UssdRepository {
  private readonly sql: Sql;

  constructor(private readonly db: Db) {
    this.sql = sqlOf(db);
  }

  // ---- sessions --------------------------------------------------------------------------
  async findSession(id: string): Promise<Session | undefined> {
    const row = await this.sql.one<SessionRow>('select * from ussd_sessions where id = ?', [id]);
    return row && toSession(row);
  }

  /** Inserts a new session; false when another hop (or instance) inserted the same id first. */
  async insertSession(s: Session): Promise<boolean> {
    const row: SessionRow = {
      id: s.id,
      phone_number: s.phoneNumber,
      service_code: s.serviceCode,
      snapshot: s.snapshot,
      state: s.state,
      is_authenticated: s.isAuthenticated,
      last_text_digest: s.lastText.digest,
      last_text_length: s.lastText.length,
      last_reply: s.lastReply,
      status: s.status,
      version: s.version,
      created_at: s.createdAt,
      updated_at: s.updatedAt,
      expires_at: s.expiresAt,
      network_code: s.networkCode,
    };
    try {
      await this.sql.run(...insertInto('ussd_sessions', { ...row }));
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** Updates only when the row still has `version`; false when another hop got there first. */
  async updateSession(id: string, version: number, changes: SessionChanges): Promise<boolean> {
    return (await this.sql.run(...updateWhere('ussd_sessions', sessionColumns(changes), { id, version }))) === 1;
  }

  /** Records the gateway's end-of-session notification; false when no session has this id (any more). */
  async recordSessionEnd(id: string, end: SessionEnd): Promise<boolean> {
    const columns = { end_status: end.status, end_duration_ms: end.durationMs, end_error: end.error, ended_at: end.endedAt };
    return (await this.sql.run(...updateWhere('ussd_sessions', columns, { id }))) === 1;
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
      .where((q) => void q.where({ status: 'closed' }).andWhere('expires_at', '<=', closedBy))
      .orWhere('expires_at', '<=', expiredBy)
      .delete();
  }

  // ---- accounts ---------------------------------------------------------------------------
  private async account(where: Partial<AccountRow>): Promise<Account | undefined> {
    const row = await this.db<AccountRow>('ussd_accounts').where(where).first();
    return row && toAccount(row);
  }

  findAccountByCustomerId(customerId: string): Promise<Account | undefined> {
    return this.account({ customer_id: customerId });
  }

  findAccount(id: string): Promise<Account | undefined> {
    return this.account({ id });
  }

  findAccountByPhone(phone: string): Promise<Account | undefined> {
    return this.account({ phone_number: phone });
  }

  /** Inserts an account without its household yet; false when its phone number or Customer ID is taken. */
  async insertAccount(a: NewAccount): Promise<boolean> {
    const row: AccountRow = {
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
    };
    try {
      await this.db('ussd_accounts').insert(row);
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
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

  async setLanguage(account: { id: string } | { phoneNumber: string }, language: Language, now: string): Promise<void> {
    const where = 'id' in account ? { id: account.id } : { phone_number: account.phoneNumber };
    await this.db('ussd_accounts').where(where).update({ language, updated_at: now });
  }

  async updatePin(id: string, sealedPin: string, now: string): Promise<void> {
    await this.db('ussd_accounts').where({ id }).update({ pin_encrypted: sealedPin, failed_pin_attempts: 0, updated_at: now });
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

  /**
   * Records an account's household DID, in the household registration's transaction
   * (accounts.ts). Throws if the account has gone meanwhile (removed as abandoned), which undoes
   * the twin too.
   */
  async setHouseholdDid(trx: Knex.Transaction, accountId: string, did: string, now: string): Promise<void> {
    const updated = await sqlOf(trx).run('update ussd_accounts set household_did = ?, updated_at = ? where id = ? and household_did is null', [did, now, accountId]);
    if (updated !== 1) throw new Error(`account ${accountId} disappeared before its household was set`);
  }

  /** Frees the days a claim that was not accepted used, so they can be sent again. */
  async releaseFuelLogs(accountId: string, claimId: string, now: string): Promise<number> {
    return this.db('ussd_fuel_logs').where({ account_id: accountId, claim_id: claimId }).update({ claim_id: null, updated_at: now });
  }

  /** The account's logged days, oldest first. */
  async fuelLogs(accountId: string): Promise<FuelLog[]> {
    const rows = await this.db<FuelLogRow>('ussd_fuel_logs').where({ account_id: accountId }).orderBy('log_date').select('id', 'log_date', 'kg', 'claim_id');
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
