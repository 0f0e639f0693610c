// The node's pagination over a store of 2,500 rows: the page sizes the README states (100 without
// a limit, at most 1000), and following next_key from any page size reads every row once.
import { create } from '@bufbuild/protobuf';
import { expect } from 'chai';
import { PageRequestSchema } from '../../generated/proto/cosmos/base/query/v1beta1/pagination_pb.ts';
import { DEFAULT_LIMIT, MAX_LIMIT, paginate, type OrderedStore, type PageWindow } from '../../src/chain/node/pagination.ts';

const ROWS = Array.from({ length: 2500 }, (_, i) => `row-${String(i).padStart(5, '0')}`);

/** The rows in order, as a store of the node reads them; records every window asked for. */
function store(): OrderedStore<string> & { windows: PageWindow[] } {
  const windows: PageWindow[] = [];
  return {
    windows,
    async fetch(w) {
      windows.push(w);
      const ordered = w.reverse ? [...ROWS].reverse() : ROWS;
      const from = w.fromKey === undefined ? 0 : ordered.indexOf(w.fromKey);
      return ordered.slice(from + w.offset, from + w.offset + w.take);
    },
    async count() {
      return ROWS.length;
    },
    keyOf: (row) => row,
  };
}

const page = (s: OrderedStore<string>, req: Parameters<typeof create<typeof PageRequestSchema>>[1]) => paginate(s, create(PageRequestSchema, req));
const keyText = (key: Uint8Array) => new TextDecoder().decode(key);

describe('chain pagination limits', () => {
  it(`a limit above ${MAX_LIMIT} (up to uint64's largest) is cut to ${MAX_LIMIT} rows, and next_key goes on from there`, async () => {
    for (const limit of [BigInt(MAX_LIMIT) + 1n, 5000n, 2n ** 64n - 1n]) {
      const s = store();
      const { items, pagination } = await page(s, { limit });
      expect(items).to.deep.equal(ROWS.slice(0, MAX_LIMIT));
      expect(keyText(pagination.nextKey)).to.equal(ROWS[MAX_LIMIT]);
      // One row more than the page, to learn the next key: never the whole table.
      expect(s.windows.map((w) => w.take)).to.deep.equal([MAX_LIMIT + 1]);
    }
  });

  it(`exactly ${MAX_LIMIT} is one page of ${MAX_LIMIT}; no limit is ${DEFAULT_LIMIT} with the total`, async () => {
    expect((await page(store(), { limit: BigInt(MAX_LIMIT) })).items).to.have.length(MAX_LIMIT);
    const first = await page(store(), {});
    expect(first.items).to.deep.equal(ROWS.slice(0, DEFAULT_LIMIT));
    expect(first.pagination.total).to.equal(BigInt(ROWS.length));
  });

  for (const limit of [7n, 1000n, 100000n]) {
    for (const reverse of [false, true]) {
      it(`following next_key with limit ${limit}${reverse ? ', reversed' : ''} reads every row once, in order`, async () => {
        const s = store();
        const read: string[] = [];
        let key: Uint8Array | undefined;
        do {
          const { items, pagination } = await page(s, { limit, reverse, ...(key ? { key } : {}) });
          read.push(...items);
          key = pagination.nextKey.length ? pagination.nextKey : undefined;
        } while (key);
        expect(read).to.deep.equal(reverse ? [...ROWS].reverse() : ROWS);
      });
    }
  }
});
