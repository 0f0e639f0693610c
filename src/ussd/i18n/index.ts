// The catalogues by language code.
import type { Catalogue, Language } from './catalogue.ts';
import { en } from './en.ts';
import { sw } from './sw.ts';

export { FUEL_DAYS, LANGUAGES, type Catalogue, type Language, type ReasonKey } from './catalogue.ts';

export const CATALOGUES: Record<Language, Catalogue> = { en, sw };
