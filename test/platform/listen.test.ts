// Start-up on an address it cannot listen on: the error names the variable at fault, as every
// bad setting does, instead of a stack (or a message about the database).
import { createServer, type AddressInfo, type Server } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { ConfigError } from '../../src/config.ts';
import { startGrpcNode } from '../../src/chain/node/server.ts';
import { listen } from '../../src/platform/server.ts';

describe('listening', () => {
  let busy: Server;
  let busyPort: number;
  before(async () => {
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    busyPort = (busy.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => busy.close(() => r())));

  const failure = (p: Promise<unknown>) => p.then(() => expect.fail('listened'), (err: unknown) => err);

  it('a PORT in use is an invalid PORT', async () => {
    const err = await failure(listen(express(), busyPort, '127.0.0.1', 1000));
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.equal(`Invalid configuration:\n  PORT: port ${busyPort} is already in use on 127.0.0.1`);
  });

  it('a HOST that is no address of this machine is an invalid HOST', async () => {
    // 203.0.113.0/24 is TEST-NET-3 (RFC 5737): never a local address.
    const err = await failure(listen(express(), 0, '203.0.113.7', 1000));
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.equal('Invalid configuration:\n  HOST: 203.0.113.7 is not an address of this machine');
  });

  it('the gRPC node names GRPC_PORT and GRPC_HOST', async () => {
    const inUse = await failure(startGrpcNode(() => {}, '127.0.0.1', busyPort, { deadlineMs: 1000 }));
    expect((inUse as Error).message).to.equal(`Invalid configuration:\n  GRPC_PORT: port ${busyPort} is already in use on 127.0.0.1`);
    const elsewhere = await failure(startGrpcNode(() => {}, '203.0.113.7', 0, { deadlineMs: 1000 }));
    expect((elsewhere as Error).message).to.equal('Invalid configuration:\n  GRPC_HOST: 203.0.113.7 is not an address of this machine');
  });
});
