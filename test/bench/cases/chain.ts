// Area C gateway routes. Data is created through area A's API first (one device entity and 60
// KPT claims), so the node reads real rows. The same queries made directly over gRPC are in
// test/bench/chain-grpc.ts (autocannon speaks HTTP/1.1 only).
import { randomBytes } from 'node:crypto';
import type { BenchCase, BenchTarget } from '../case.ts';

export interface ChainBenchData {
  entityDid: string;
  /** The last claim it posted. */
  claimId: string;
}

async function post(target: BenchTarget, path: string, body: unknown): Promise<any> {
  const res = await fetch(target.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${target.key}` },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

const byDatabase = new Map<string, Promise<ChainBenchData>>();
// A collection of this run's own: another bench process (chain-grpc.ts) may seed the same database.
const COLLECTION = `bench-chain-${randomBytes(4).toString('hex')}`;

/** Creates the bench data once per database (instances sharing one share it). */
export function seedChainData(target: BenchTarget): Promise<ChainBenchData> {
  let p = byDatabase.get(target.database);
  if (!p) {
    p = (async () => {
      const entity = await post(target, '/v1/entities', {
        type: 'CleanCookingDevice',
        properties: {},
        relationships: {},
        services: [{ id: '#data', type: 'DataService', endpoint: 'https://data.example/stoves/1' }],
        verifiableCredential: [{ type: 'StoveCertificate', issuer: 'did:ixo:entity:0000000000000000000000000000a11c' }],
      });
      await post(target, '/v1/collections', { id: COLLECTION, name: 'Bench collection', selectionMethod: 'random draw' });
      let claimId = '';
      for (let i = 0; i < 60; i++) {
        ({ id: claimId } = await post(target, '/v1/claims', {
          type: 'KPTClaim',
          collectionId: COLLECTION,
          householdId: `did:ixo:entity:${i.toString(16).padStart(32, '0')}`,
          testGroup: i % 2 ? 'intervention' : 'reference',
          fuelMeasurements: { total: 7.5, dailyLogs: [2.5, 2.5, 2.5] },
          testPeriod: { startDate: '2024-06-01', endDate: '2024-06-03', durationDays: 3 },
          externalFactors: { season: 'dry', culturalEvents: ['none'], occupationalFactors: ['farming'] },
        }));
      }
      return { entityDid: entity.did as string, claimId };
    })();
    byDatabase.set(target.database, p);
  }
  return p;
}

export const cases: BenchCase[] = [
  {
    name: 'GET /chain/entity/{id}',
    targetRatio: 0.35,
    targetP99Ms: 50,
    async prepare(target) {
      const { entityDid } = await seedChainData(target);
      return { url: `${target.baseUrl}/chain/entity/${entityDid}` };
    },
  },
  {
    name: 'GET /chain/claims/claim/{id}',
    async prepare(target) {
      const { claimId } = await seedChainData(target);
      return { url: `${target.baseUrl}/chain/claims/claim/${claimId}` };
    },
  },
  {
    name: 'GET /chain/claims/claims?pagination.limit=50',
    async prepare(target) {
      await seedChainData(target);
      return { url: `${target.baseUrl}/chain/claims/claims?pagination.limit=50` };
    },
  },
];
