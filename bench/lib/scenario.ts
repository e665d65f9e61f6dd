import type { Row } from './report.js';
import type { Stores } from './stack.js';

/** What every scenario gets from the runner. */
export interface Ctx {
  stores: Stores;
  /** Alternations of target and baseline (BENCH_ROUNDS). */
  rounds: number;
  /** About how long one measured step of a round lasts (BENCH_SECONDS). */
  seconds: number;
  /** Requests (or operations) in flight for the throughput scenarios (BENCH_CONNECTIONS). */
  connections: number;
}

export interface Scenario {
  name: string;
  /** The table rows it produces (what --only selects by). */
  ids: string[];
  run(ctx: Ctx): Promise<Row[]>;
}
