// The error shapes of areas B (the gateway's POST, in English) and C (under /chain), as the
// areas give them to the app, for tests that build their own small app.
import type { Request } from 'express';
import { cosmosErrorRenderer } from '../../src/chain/gateway/errors.ts';
import type { ErrorRenderer } from '../../src/platform/http/errors.ts';
import { ussdErrorRendererFor } from '../../src/ussd/reply.ts';

const ussdShape = ussdErrorRendererFor(() => 'en');

export const areaShapes = (req: Request): ErrorRenderer | undefined => ussdShape(req) ?? (req.path.startsWith('/chain') ? cosmosErrorRenderer('v1') : undefined);
