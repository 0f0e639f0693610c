// Cosmos SDK pagination (types/query/pagination.go) over an ordered store: either a key (from
// a previous next_key, inclusive) or an offset; limit 0 means 100 and a total count; next_key
// is the key of the first item of the next page; total only when counted from the start.
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  PageResponseSchema,
  type PageRequest,
  type PageResponse,
} from '../../../generated/proto/cosmos/base/query/v1beta1/pagination_pb.ts';

export const DEFAULT_LIMIT = 100;
/** Larger pages are cut to this size; the client follows next_key as usual. */
export const MAX_LIMIT = 1000;

export interface PageWindow {
  /** Start at this key (inclusive), in store order. */
  fromKey?: string;
  offset: number;
  /** Rows to fetch: the page size plus one to learn the next key. */
  take: number;
  reverse: boolean;
}

export interface OrderedStore<T> {
  fetch(window: PageWindow): Promise<T[]>;
  count(): Promise<number>;
  keyOf(item: T): string;
}

const encodeKey = (k: string) => new TextEncoder().encode(k);

export async function paginate<T>(store: OrderedStore<T>, req: PageRequest | undefined): Promise<{ items: T[]; pagination: PageResponse }> {
  const key = decodeKey(req?.key);
  const offset = req?.offset ?? 0n;
  if (key !== undefined && offset > 0n) {
    throw new ConnectError('invalid request, either offset or key is expected, got both', Code.InvalidArgument);
  }
  let limit = req?.limit ?? 0n;
  let countTotal = req?.countTotal ?? false;
  if (limit === 0n) {
    limit = BigInt(DEFAULT_LIMIT);
    countTotal = true;
  }
  const size = Number(limit > BigInt(MAX_LIMIT) ? BigInt(MAX_LIMIT) : limit);
  if (offset > BigInt(Number.MAX_SAFE_INTEGER)) throw new ConnectError('pagination offset is too large', Code.InvalidArgument);
  const rows = await store.fetch({ fromKey: key, offset: Number(offset), take: size + 1, reverse: req?.reverse ?? false });
  const items = rows.slice(0, size);
  const next = rows[size];
  const total = key === undefined && countTotal ? BigInt(await store.count()) : 0n;
  return { items, pagination: create(PageResponseSchema, { nextKey: next ? encodeKey(store.keyOf(next)) : new Uint8Array(), total }) };
}

/** Keys are the UTF-8 store keys this node hands out; anything else is a bad argument. */
function decodeKey(bytes: Uint8Array | undefined): string | undefined {
  if (!bytes?.length) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ConnectError('pagination key is not a key this node issued', Code.InvalidArgument);
  }
}
