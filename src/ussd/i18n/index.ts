// The catalogues by language code.
import { LANGUAGES, type Catalogue, type Language } from './catalogue.ts';
import { en } from './en.ts';
import { sw } from './sw.ts';

export { FUEL_DAYS, LANGUAGES, type Catalogue, type Language, type ReasonKey } from './catalogue.ts';

export const CATALOGUES: Record<Language, Catalogue> = { en, sw };

/** The language of a code, if it is one of the catalogues'. */
export const asLanguage = (code: string | undefined): Language | undefined => LANGUAGES.find((l) => l === code);
