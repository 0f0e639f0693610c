// `make start` and `npm start` hand SIGTERM to the server: a process manager that stops either
// must not leave an orphaned server holding the port (as make did through npx and the tsx
// wrapper, and npm through the shell it runs a script in).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { freePort } from '../helpers/server-process.ts';

const ROOT = resolve(import.meta.dirname, '../..');

async function health(port: number): Promise<number | null> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return null;
  }
}

/**
 * Starts the server through `command` (its output on stdout), waits until it answers, sends
 * SIGTERM to that command's process and expects the server gone once the command has exited.
 */
async function stopsOnSigterm(command: string, args: string[]): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-start-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), GRPC_PORT: String(await freePort()), LOG_LEVEL: 'info' };
  delete env.MAKEFLAGS;
  delete env.MAKELEVEL;
  delete env.MFLAGS;
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = once(child, 'exit');
  try {
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Hearth is listening')) resolve();
      });
      void exited.then(() => reject(new Error(`${command} ${args.join(' ')} ended before the server listened:\n${out}`)));
    });
    expect(await health(port), 'the server did not answer /health').to.equal(200);
    child.kill('SIGTERM');
    await exited;
    // The server is gone, not merely detached: the command waited for it.
    expect(await health(port)).to.equal(null);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('make start and npm start', () => {
  it('make start stops the server when make gets SIGTERM', async function () {
    this.timeout(120_000);
    // make builds if it must, then the server logs that it listens.
    await stopsOnSigterm('make', ['--no-print-directory', 'start']);
  });

  it('npm start stops the server when npm gets SIGTERM (the script execs node: npm signals node, not a shell)', async function () {
    this.timeout(120_000);
    // npm start runs dist/ as it is: built first (nothing to do when make start just did).
    execFileSync('make', ['--no-print-directory', 'build'], { cwd: ROOT, stdio: 'ignore' });
    await stopsOnSigterm('npm', ['start', '--silent']);
  });
});
