// Migrations are the TypeScript files in this folder, applied in file-name order by Kysely's
// Migrator (platform/db/migrate.ts). Each area adds its own files (NNN_<area>_<what>.ts), so
// areas never edit the same file; a new file's number comes after every existing one, whatever
// its area: the Migrator refuses a database whose history a new name would sort into. Built
// (dist/), they are .js files of the same names: a migration's name leaves out the extension.
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ColumnDefinitionBuilder, CreateTableBuilder, Kysely, Migration, MigrationProvider } from 'kysely';
import { dbClientOf } from '../index.ts';

const here = dirname(fileURLToPath(import.meta.url));

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    const files = readdirSync(here)
      .filter((f) => /^\d{3}_.*\.[jt]s$/.test(f))
      .sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) migrations[file.replace(/\.[jt]s$/, '')] = (await import(`./${file}`)) as Migration;
    return migrations;
  },
};

/** A migration's view of the database: tables of any columns (row types are what migrations make). */
export type MigrationDb = Kysely<Record<string, Record<string, unknown>>>;

/**
 * An auto-incrementing integer primary key: the same column on both databases (SQLite's rowid
 * alias with AUTOINCREMENT, so a number is never reused; PostgreSQL's serial).
 */
export function withIncrements<T extends string>(db: MigrationDb, table: CreateTableBuilder<T>, column: string): CreateTableBuilder<T> {
  return dbClientOf(db) === 'postgres'
    ? table.addColumn(column, 'serial', (c) => c.notNull().primaryKey())
    : table.addColumn(column, 'integer', (c) => c.notNull().primaryKey().autoIncrement());
}

/** A double-precision float column's type: the same numbers on both databases. */
export const doubleType = (db: MigrationDb) => (dbClientOf(db) === 'postgres' ? 'double precision' : 'real');

export const notNull = (c: ColumnDefinitionBuilder) => c.notNull();
