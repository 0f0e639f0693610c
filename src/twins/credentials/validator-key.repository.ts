// The only SQL for the validator keys (validator-key.ts): every key that has signed credentials,
// the one generated key (a unique slot) and the one current key (another), shared by every instance.
import type { Db } from '../../platform/db/index.ts';
import { inTransaction, lockUntilCommit, type Sql } from '../../platform/db/sql.ts';

const GENERATED_SLOT = 'validator';
const CURRENT_SLOT = 'current';

interface KeyRecord {
  did: string;
  publicKey: string;
  at: string;
}

/** Records a key given by configuration (its seed is not stored); one already recorded stays. */
export async function recordConfiguredKey(db: Db, key: KeyRecord): Promise<void> {
  await db('twin_validator_keys')
    .insert({ did: key.did, public_key: key.publicKey, private_seed: null, origin: 'configured', generated_slot: null, created_at: key.at })
    .onConflict('did')
    .ignore();
}

/** The generated key's seed (hex), if one was generated. */
export async function findGeneratedSeed(db: Db): Promise<string | undefined> {
  return (await db('twin_validator_keys').first('private_seed').where('generated_slot', GENERATED_SLOT))?.private_seed ?? undefined;
}

/** Stores a generated key unless one is stored already (the unique slot lets one insert win). */
export async function storeGeneratedKeyIfNone(db: Db, key: KeyRecord & { seedHex: string }): Promise<void> {
  await db('twin_validator_keys')
    .insert({ did: key.did, public_key: key.publicKey, private_seed: key.seedHex, origin: 'generated', generated_slot: GENERATED_SLOT, created_at: key.at })
    .onConflict('generated_slot')
    .ignore();
}

export async function validatorKeyDids(db: Db): Promise<string[]> {
  return db('twin_validator_keys').pluck('did');
}

/**
 * Makes `did` the current key (the one that issues) and retires the key that was, in one
 * transaction; instances starting at once take turns (lockUntilCommit), the last one's key wins.
 */
export async function makeCurrentKey(db: Db, did: string, at: string): Promise<void> {
  await inTransaction(db, async (sql) => {
    await lockUntilCommit(sql, 'validator-keys');
    await sql('twin_validator_keys').update({ current_slot: null, retired_at: at }).where('current_slot', CURRENT_SLOT).whereNot('did', did);
    await sql('twin_validator_keys').update({ current_slot: CURRENT_SLOT, retired_at: null }).where('did', did);
  });
}

/** Whether `did` is the current key (a retired one issues nothing new). */
export async function isCurrentKey(sql: Sql, did: string): Promise<boolean> {
  return (await sql('twin_validator_keys').first('did').where({ did, current_slot: CURRENT_SLOT })) !== undefined;
}
