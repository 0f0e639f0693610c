// Migrations are the TypeScript files in this folder, applied in file-name order. Each area
// adds its own files (NNN_<area>_<what>.ts), so areas never edit the same file. Built (dist/),
// they are .js files of the same names: a migration's name leaves out the extension.
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const here = dirname(fileURLToPath(import.meta.url));

export const migrationSource: Knex.MigrationSource<string> = {
  async getMigrations() {
    return readdirSync(here)
      .filter((f) => /^\d{3}_.*\.[jt]s$/.test(f))
      .sort();
  },
  getMigrationName(name) {
    return name.replace(/\.[jt]s$/, '');
  },
  async getMigration(name): Promise<Migration> {
    return (await import(`./${name}`)) as Migration;
  },
};
