// The soak's "Redis keeps" figure (bench/soak/sample.ts keptBytes): what the keys that must stay
// flat hold, with Redis's own overhead attributed. Scheduled keys (a TTL: booking records kept
// for 30 days) pile up during a soak by design; their entries in the expiry table and their
// share of the main table must not count as kept memory, nor must the client buffers of the
// sampled instant — while a kept key that grows must still show.
import { describe, expect, it } from 'vitest';
import { keptBytes, quietPass, QUIET_PASS_BYTES, type RedisOverhead } from '../../bench/soak/sample.js';

const KB = 1024;
// What a sample sees: keys' own values by class, and the tables as Redis sizes them
// (an entry of 24 bytes per key, 8 bytes a bucket, buckets a power of two ≥ keys).
function sample(opts: { kept: number; keptBytes: number; scheduled: number; clients: number }) {
  const all = opts.kept + opts.scheduled;
  const buckets = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(4, n)));
  const o: RedisOverhead = {
    clients: opts.clients,
    mainTable: all * 24 + buckets(all) * 8,
    expiresTable: opts.scheduled * 24 + buckets(opts.scheduled) * 8,
  };
  const scheduledBytes = opts.scheduled * 400;
  const startup = 900 * KB;
  const used = startup + opts.keptBytes + scheduledBytes + o.clients + o.mainTable + o.expiresTable;
  return keptBytes(used, o, { all, kept: opts.kept }, scheduledBytes);
}

describe('the soak judges the memory Redis keeps, not its overhead of the moment', () => {
  it('stays flat while scheduled keys pile up and client buffers swing', () => {
    const early = sample({ kept: 680, keptBytes: 1700 * KB, scheduled: 200, clients: 300 * KB });
    const late = sample({ kept: 680, keptBytes: 1700 * KB, scheduled: 3000, clients: 520 * KB });
    expect(Math.abs(late - early) / early).toBeLessThan(0.01);
  });

  it('shows a kept key that grows', () => {
    const early = sample({ kept: 680, keptBytes: 1700 * KB, scheduled: 200, clients: 300 * KB });
    const late = sample({ kept: 680, keptBytes: 1950 * KB, scheduled: 200, clients: 300 * KB });
    expect(late - early).toBe(250 * KB);
  });
});

// The pass that classifies the keys and the used_memory it is set against must see the same
// Redis: a launch between the two (hundreds of job records) put the kept memory 8 % low at one
// sample of a short soak.
describe('the soak sets a pass against a used_memory that held still over it', () => {
  /** used_memory as Redis would answer it: a list of readings, one per call. */
  const readings = (...values: number[]) => {
    let i = 0;
    return async () => values[Math.min(i++, values.length - 1)]!;
  };

  it('takes the pass again when used_memory moved over it, and keeps the still one', async () => {
    let passes = 0;
    const got = await quietPass(
      readings(7_000 * KB, 7_350 * KB, 7_400 * KB, 7_410 * KB),
      async () => ++passes,
    );
    expect(passes).toBe(2);
    expect(got).toEqual({ result: 2, used: 7_405 * KB, moved: 10 * KB, passes: 2 });
  });

  it('takes one pass when nothing moved', async () => {
    const got = await quietPass(readings(7_000 * KB, 7_000 * KB + QUIET_PASS_BYTES), async () => 'one');
    expect(got).toEqual({
      result: 'one',
      used: 7_000 * KB + QUIET_PASS_BYTES / 2,
      moved: QUIET_PASS_BYTES,
      passes: 1,
    });
  });

  it('gives up after its tries with the pass that moved least', async () => {
    let passes = 0;
    const got = await quietPass(
      readings(1_000 * KB, 1_500 * KB, 1_500 * KB, 1_700 * KB, 1_700 * KB, 2_400 * KB),
      async () => ++passes,
    );
    expect(passes).toBe(3);
    expect(got).toEqual({ result: 2, used: 1_600 * KB, moved: 200 * KB, passes: 3 });
  });
});
