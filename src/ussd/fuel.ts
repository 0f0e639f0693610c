// What a household may log as a day's fuel. The bound is the contract's (config.ts reads it from
// FuelMeasurements' dailyLogs items).
import { MAX_KG_PER_DAY } from '../config.ts';

/** Kilograms as a household types them: `2.5`, `2,5` (as common on handsets), or `.5` for half a kilo; at most 3 decimals. */
export function parseKg(value: string): number | undefined {
  const v = value.trim().replace(',', '.');
  if (!/^(\d{1,4}(\.\d{1,3})?|\.\d{1,3})$/.test(v)) return undefined;
  const kg = Number(v);
  return kg > 0 && kg <= MAX_KG_PER_DAY ? kg : undefined;
}
