// What a household may log as a day's fuel. The bound is the contract's (FuelMeasurements'
// dailyLogs items): an amount area A would refuse must be refused when typed, not when the claim
// is sent days later.
import { bundledContract, contractSchema } from '../platform/contract.ts';

const dailyLogsItem = contractSchema(bundledContract(), 'FuelMeasurements').properties?.dailyLogs?.items as { maximum?: number } | undefined;
if (typeof dailyLogsItem?.maximum !== 'number') throw new Error('The bundled contract has no maximum for FuelMeasurements.dailyLogs items; run make generate.');

/** The most kg a claim may hold for one day. */
export const MAX_KG_PER_DAY: number = dailyLogsItem.maximum;

/** Kilograms as a household types them: `2.5`, `2,5` (as common on handsets), or `.5` for half a kilo; at most 3 decimals. */
export function parseKg(value: string): number | undefined {
  const v = value.trim().replace(',', '.');
  if (!/^(\d{1,4}(\.\d{1,3})?|\.\d{1,3})$/.test(v)) return undefined;
  const kg = Number(v);
  return kg > 0 && kg <= MAX_KG_PER_DAY ? kg : undefined;
}
