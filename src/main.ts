// CLI entry: `start` (migrate, then serve), `migrate`, `keys create|list|revoke`, `move-base-url`.
import { parseArgs } from 'node:util';
import { createHearth } from './app.ts';
import { ConfigError, loadConfig, publicBaseUrl, type Config } from './config.ts';
import { createDbFromConfig, databaseUnreachable, type Db } from './platform/db/index.ts';
import { migrateLatest } from './platform/db/migrate.ts';
import { DomainError, notFoundError } from './platform/domain-errors.ts';
import { ApiKeyService, SCOPES } from './platform/keys/service.ts';
import { createLogger } from './platform/logging.ts';
import { listen } from './platform/server.ts';
import { moveBaseUrl } from './twins/credentials/public-base-url.ts';
import { resetUssdPin, unlockUssdAccount, ussdClaimForRef } from './ussd/index.ts';
import { runDemo, runSimulator, SimulatorConnectionError } from './ussd/simulator.ts';

const USAGE = `Usage: node dist/src/main.js <command>   (from source: npx tsx src/main.ts <command>)

Commands:
  start                          migrate the database, then serve HTTP on PORT
  migrate                        apply pending database migrations
  keys create --name <name> --principal <did> [--scopes a,b]
                                 create an API key and print it once
  keys list                      list keys (never the secrets)
  keys revoke <id>               revoke a key
  move-base-url <url>            sign new credentials under another public base URL (the database's
                                 PUBLIC_BASE_URL); credentials signed under earlier ones keep verifying
  ussd-sim [--url <base>] [--phone <e164>] [--code <*384#>]
                                 a terminal USSD phone against a running server
  ussd-demo [--url <base>] [--code <*384#>]
                                 walk the household journey against a running server
  ussd-unlock <customerId>       unlock a USSD account locked after 3 wrong PINs
  ussd-unlock <customerId> --new-pin
                                 the same, with a new random PIN for a household that forgot its PIN
  ussd-claim <reference>         the claim id behind a USSD claim reference (e.g. 99J43FTX)

Scopes: ${SCOPES.join(', ')}`;

async function withDb<T>(config: Config, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = createDbFromConfig(config);
  try {
    await migrateLatest(db);
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

async function start(config: Config): Promise<void> {
  const logger = createLogger(config);
  const db = createDbFromConfig(config);
  const applied = await migrateLatest(db);
  if (applied.length) logger.info({ applied }, 'migrations applied');
  const hearth = await createHearth({ config, db, logger });
  const server = await listen(hearth.app, config.PORT, config.HOST, config.SHUTDOWN_TIMEOUT_MS, {
    headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
  });
  logger.info({ port: server.port, host: config.HOST, environment: config.NODE_ENV }, 'Hearth is listening');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // Cut requests are the clients' loss: an operator tells a clean drain from one that cut some.
    await server.stop((open) => logger.warn({ openConnections: open, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }, 'shutdown: connections still open at SHUTDOWN_TIMEOUT_MS are cut, with their requests'));
    await hearth.close();
    await db.destroy();
    logger.info('shutdown complete');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

async function keys(config: Config, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { name: { type: 'string' }, principal: { type: 'string' }, scopes: { type: 'string' } },
    allowPositionals: true,
  });
  await withDb(config, async (db) => {
    const service = new ApiKeyService(db);
    if (sub === 'create') {
      if (!values.name || !values.principal) throw new UsageError('keys create needs --name and --principal');
      const { key, info } = await service.create({
        name: values.name,
        principalDid: values.principal,
        scopes: scopesOf(values.scopes),
      });
      console.log(`Created key ${info.id} for ${info.principalDid} with scopes ${info.scopes.join(', ')}.`);
      console.log('Store it now; it is shown only once:');
      console.log(key);
    } else if (sub === 'list') {
      for (const k of await service.list()) {
        console.log([k.id, k.prefix + '…', k.name, k.principalDid, k.scopes.join(','), k.revokedAt ? `revoked ${k.revokedAt}` : 'active'].join('\t'));
      }
    } else if (sub === 'revoke') {
      const id = positionals[0];
      if (!id) throw new UsageError('keys revoke needs a key id');
      if (!(await service.revoke(id))) throw new UsageError(`No active key with id ${id}`);
      console.log(`Revoked key ${id}.`);
    } else {
      throw new UsageError(`Unknown keys command: ${sub ?? '(none)'}`);
    }
  });
}

class UsageError extends Error {}

/** --scopes as given: none given is the default scopes; given empty is a mistake, not every default. */
function scopesOf(option: string | undefined): string[] | undefined {
  if (option === undefined) return undefined;
  const scopes = option.split(',').map((s) => s.trim()).filter(Boolean);
  if (!scopes.length) throw new UsageError('--scopes names no scope; leave it out for the default scopes');
  return scopes;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  const config = loadConfig();
  switch (command) {
    case 'start':
      return start(config);
    case 'migrate': {
      const db = createDbFromConfig(config);
      try {
        const applied = await migrateLatest(db);
        console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
      } finally {
        await db.destroy();
      }
      return;
    }
    case 'keys':
      return keys(config, args);
    case 'move-base-url': {
      const [url] = args;
      if (!url || args.length > 1) throw new UsageError('move-base-url takes one URL');
      // Checked as PUBLIC_BASE_URL is (a ConfigError naming it), and written as instances write it.
      const target = publicBaseUrl(loadConfig({ ...process.env, PUBLIC_BASE_URL: url }));
      const before = await withDb(config, (db) => moveBaseUrl(db, target));
      console.log(before === target
        ? `The public base URL is ${target} already.`
        : `New credentials are signed under ${target}${before ? ` (was ${before}; credentials signed under it keep verifying)` : ''}. Set PUBLIC_BASE_URL=${target} (or leave it unset) on every instance and restart them.`);
      return;
    }
    case 'ussd-sim': {
      const { values } = parseArgs({ args, options: { url: { type: 'string' }, phone: { type: 'string' }, code: { type: 'string' } } });
      return runSimulator({
        url: values.url ?? `http://127.0.0.1:${config.PORT}`,
        phoneNumber: values.phone ?? '+254700000001',
        serviceCode: values.code ?? '*384*1234#',
      });
    }
    case 'ussd-demo': {
      const { values } = parseArgs({ args, options: { url: { type: 'string' }, code: { type: 'string' } } });
      return runDemo({ url: values.url ?? `http://127.0.0.1:${config.PORT}`, serviceCode: values.code ?? '*384*1234#' });
    }
    case 'ussd-unlock': {
      const { values, positionals } = parseArgs({ args, options: { 'new-pin': { type: 'boolean' } }, allowPositionals: true });
      const [customerId] = positionals;
      if (!customerId || positionals.length > 1) throw new UsageError('ussd-unlock takes one Customer ID (and --new-pin for a household that forgot its PIN)');
      if (values['new-pin']) {
        const reset = await withDb(config, (db) => resetUssdPin(db, config, createLogger(config), customerId));
        if (reset === 'not found') throw notFoundError(`No USSD account with Customer ID ${customerId}.`);
        // For the operator's eyes only (never logged): the household is told it in person.
        console.log(`Unlocked Customer ID ${customerId} with the new PIN ${reset.pin}. Give it to the household in person; they can change it under Services, Change PIN.`);
        return;
      }
      const outcome = await withDb(config, (db) => unlockUssdAccount(db, customerId));
      if (outcome === 'not found') throw notFoundError(`No USSD account with Customer ID ${customerId}.`);
      console.log(outcome === 'unlocked' ? `Unlocked Customer ID ${customerId}.` : `Customer ID ${customerId} is not locked.`);
      return;
    }
    case 'ussd-claim': {
      const ref = args[0];
      if (!ref || args.length > 1) throw new UsageError('ussd-claim takes one claim reference');
      const claimId = await withDb(config, (db) => ussdClaimForRef(db, ref));
      if (!claimId) throw notFoundError(`No USSD claim with reference ${ref}.`);
      console.log(claimId);
      return;
    }
    default:
      throw new UsageError(command ? `Unknown command: ${command}` : 'No command given');
  }
}

main(process.argv.slice(2)).catch((err) => {
  const unreachable = databaseUnreachable(err);
  if (unreachable) console.error(unreachable);
  else if (err instanceof ConfigError) console.error(err.message);
  // An unknown or malformed option (node:util parseArgs) is a usage error too, not a stack trace.
  else if (err instanceof UsageError || String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) console.error(`${(err as Error).message}\n\n${USAGE}`);
  else if (err instanceof DomainError) console.error(err.message);
  else if (err instanceof SimulatorConnectionError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
