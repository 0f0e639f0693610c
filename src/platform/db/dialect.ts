import type { Knex } from 'knex';

/** Whether a Knex handle (the pool, a transaction, a migration's) runs on PostgreSQL rather than SQLite. */
export const onPostgres = (knex: Knex): boolean => knex.client.dialect === 'postgresql';
