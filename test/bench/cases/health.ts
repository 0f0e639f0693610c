import type { BenchCase } from '../case.ts';

export const cases: BenchCase[] = [
  {
    name: 'GET /health',
    async prepare({ baseUrl }) {
      return { url: `${baseUrl}/health` };
    },
  },
];
