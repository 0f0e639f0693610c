// `make start` hands SIGTERM to the server: a process manager that stops make must not leave an
// orphaned server holding the port (as it did through npx and the tsx wrapper).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';

const ROOT = resolve(import.meta.dirname, '../..');

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  await once(s, 'close');
  return port;
}

async function health(port: number): Promise<number | null> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return null;
  }
}

describe('make start', () => {
  it('stops the server when make gets SIGTERM', async function () {
    this.timeout(120_000);
    const dataDir = mkdtempSync(join(tmpdir(), 'hearth-make-start-'));
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), GRPC_PORT: String(await freePort()), LOG_LEVEL: 'info' };
    delete env.MAKEFLAGS;
    delete env.MAKELEVEL;
    delete env.MFLAGS;
    const make = spawn('make', ['--no-print-directory', 'start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'ignore'] });
    const exited = once(make, 'exit');
    try {
      // make builds if it must, then the server logs that it listens.
      let out = '';
      await new Promise<void>((resolve, reject) => {
        make.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('Hearth is listening')) resolve();
        });
        void exited.then(() => reject(new Error(`make start ended before the server listened:\n${out}`)));
      });
      expect(await health(port), 'the server did not answer /health').to.equal(200);
      make.kill('SIGTERM');
      await exited;
      // make waits for its children before it exits: the server is gone, not merely detached.
      expect(await health(port)).to.equal(null);
    } finally {
      if (make.exitCode === null) make.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
