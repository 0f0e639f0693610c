import type autocannon from 'autocannon';

/** What a benchmark case gets: the Hearth under test and an API key with every scope. */
export interface BenchTarget {
  baseUrl: string;
  key: string;
  /** Names the database behind the target: instances sharing one share what `prepare` stored. */
  database: string;
}

/**
 * One row of `make bench`. Each area adds a file under test/bench/cases/ exporting
 * `cases: BenchCase[]`. `prepare` may create data through the API first; it returns the
 * autocannon options (url, requests, setupClient...) for the measured run.
 */
export interface BenchCase {
  name: string;
  /** Target ratio to the baseline's req/s, if the issue sets one (e.g. 0.4). */
  targetRatio?: number;
  /** p99 target in ms, if the issue sets one. */
  targetP99Ms?: number;
  prepare(target: BenchTarget): Promise<Partial<autocannon.Options>>;
}
