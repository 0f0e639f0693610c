// Knex's CLI on the database the app uses (DATABASE_URL, else DATA_DIR, read by src/config.ts)
// with every area's migrations (src/platform/db/migrate.ts). The knexfile is TypeScript, so the
// CLI runs under tsx:
//   NODE_OPTIONS='--import tsx' npx knex migrate:latest        (make migrate)
//   NODE_OPTIONS='--import tsx' npx knex migrate:make <what> --migrations-directory src/<area>/migrations
// Before any other command, a history recorded by earlier Hearth versions is brought into Knex's
// as start-up does, so Knex never takes their migrations for pending ones.
import knex, { type Knex } from 'knex';
import { loadConfig } from './src/config.ts';
import { dbOptionsOf, knexConfig, makeSqliteFolder } from './src/platform/db/index.ts';
import { adoptEarlierHistory, migrationSource } from './src/platform/db/migrate.ts';

/** The app's own Knex configuration (its clients, deadline and SQLite settings). */
function connection(): Knex.Config {
  const config = knexConfig(dbOptionsOf(loadConfig()));
  makeSqliteFolder(config);
  return config;
}

export default async function knexfile(): Promise<Knex.Config> {
  // migrate:make writes a file and needs no database. Knex drops a migrationSource whenever a
  // directory is given, so the new file's folder is the only migration setting here: an area's.
  if (process.argv.includes('migrate:make')) {
    if (!process.argv.some((arg) => arg.startsWith('--migrations-directory'))) {
      throw new Error('Name the folder of the area the migration belongs to: --migrations-directory src/<area>/migrations');
    }
    return { client: 'better-sqlite3', useNullAsDefault: true, migrations: { extension: 'ts' } };
  }
  const config = connection();
  const db = knex(config);
  try {
    await adoptEarlierHistory(db);
  } finally {
    await db.destroy();
  }
  return { ...config, migrations: { migrationSource } };
}
