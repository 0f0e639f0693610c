// The only SQL for the validator keys (validator-key.ts): every key that has signed credentials,
// and the one generated key (a unique slot), shared by every instance.
import type { Db } from '../../platform/db/index.ts';

const GENERATED_SLOT = 'validator';

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
