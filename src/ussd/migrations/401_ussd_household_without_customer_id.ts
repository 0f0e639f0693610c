import type { Knex } from 'knex';

// A household's twin entity carried its USSD Customer ID as a property, which any key with
// twins:read could list: half of the household's USSD login, and enough to lock its account with
// three wrong PINs. The ID stays in ussd_accounts only; twins made before this lose the property.
export async function up(knex: Knex): Promise<void> {
  const households: { did: string; properties: string }[] = await knex('twin_entities')
    .innerJoin('ussd_accounts', 'ussd_accounts.household_did', 'twin_entities.did')
    .select('twin_entities.did as did', 'twin_entities.properties as properties');
  for (const { did, properties } of households) {
    const parsed = JSON.parse(properties) as Record<string, unknown>;
    if (!('customerId' in parsed)) continue;
    delete parsed.customerId;
    await knex('twin_entities').update({ properties: JSON.stringify(parsed) }).where('did', did);
  }
}

// Nothing to undo: the IDs are where they always were, in ussd_accounts.
export async function down(): Promise<void> {}
