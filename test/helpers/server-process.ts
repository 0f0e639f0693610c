// Starts Hearth as a process of its own (`src/main.ts start`), as an operator runs an instance:
// for tests that kill an instance (SIGKILL) or run several on one database.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestDatabase } from './databases.ts';

const ROOT = resolve(import.meta.dirname, '../..');

export async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  await once(s, 'close');
  return port;
}

/** DATABASE_URL for another process on the test's database (on PostgreSQL, in its schema). */
export function databaseUrlOf(t: TestDatabase): string {
  if (!t.schema) return t.url;
  const url = new URL(t.url);
  url.searchParams.set('options', `-c search_path=${t.schema}`);
  return url.href;
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  /** Ends it with a signal and waits for it to exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** Starts an instance on the test's database with `env`; resolves once it listens. */
export async function startServerProcess(t: TestDatabase, env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrlOf(t),
      DATA_DIR: mkdtempSync(join(tmpdir(), 'hearth-proc-')),
      PORT: String(port),
      GRPC_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Hearth is listening')) resolve();
    });
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    void exited.then(() => reject(new Error(`the server process ended before it listened:\n${out}`)));
  });
  return {
    child,
    port,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        await exited;
      }
    },
  };
}
