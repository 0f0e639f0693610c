import type { MigrationDb } from './index.ts';

// A household's twin entity carried its USSD Customer ID as a property, which any key with
// twins:read could list: half of the household's USSD login, and enough to lock its account with
// three wrong PINs. The ID stays in ussd_accounts only; twins made before this lose the property.
export async function up(db: MigrationDb): Promise<void> {
  const households = await db
    .selectFrom('twin_entities')
    .innerJoin('ussd_accounts', 'ussd_accounts.household_did', 'twin_entities.did')
    .select(['twin_entities.did as did', 'twin_entities.properties as properties'])
    .execute();
  for (const { did, properties } of households) {
    const parsed = JSON.parse(properties as string) as Record<string, unknown>;
    if (!('customerId' in parsed)) continue;
    delete parsed.customerId;
    await db.updateTable('twin_entities').set({ properties: JSON.stringify(parsed) }).where('did', '=', did).execute();
  }
}

// Nothing to undo: the IDs are where they always were, in ussd_accounts.
export async function down(): Promise<void> {}
