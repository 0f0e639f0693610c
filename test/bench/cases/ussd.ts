// Area B: USSD hops (on each database the bench runs on). Every request uses its own sessionId (new-session dials), or
// each connection walks fresh sessions three hops deep with cumulative text (dial, 1, 1*2).
import { randomBytes } from 'node:crypto';
import type { BenchCase } from '../case.ts';

const sessionId = () => `bench_${randomBytes(8).toString('hex')}`;
const hop = (sid: string, text: string) =>
  JSON.stringify({ sessionId: sid, serviceCode: '*384*1234#', phoneNumber: '+254712345678', text });
const post = { method: 'POST' as const, path: '/api/ussd', headers: { 'content-type': 'application/json' } };

export const cases: BenchCase[] = [
  {
    name: 'POST /api/ussd new-session dial',
    targetRatio: 0.4,
    targetP99Ms: 50,
    async prepare({ baseUrl }) {
      return {
        url: baseUrl,
        requests: [{ ...post, setupRequest: (req) => ({ ...req, body: hop(sessionId(), '') }) }],
      };
    },
  },
  {
    name: 'POST /api/ussd 3-hop navigation',
    targetRatio: 0.4,
    targetP99Ms: 50,
    async prepare({ baseUrl }) {
      type Ctx = { sid?: string };
      return {
        url: baseUrl,
        requests: [
          { ...post, setupRequest: (req, ctx: Ctx) => ((ctx.sid = sessionId()), { ...req, body: hop(ctx.sid, '') }) },
          { ...post, setupRequest: (req, ctx: Ctx) => ({ ...req, body: hop(ctx.sid!, '1') }) },
          { ...post, setupRequest: (req, ctx: Ctx) => ({ ...req, body: hop(ctx.sid!, '1*2') }) },
        ],
      };
    },
  },
];
