// The soak's "Redis keeps" figure (bench/soak/sample.ts keptBytes): what the keys that must stay
// flat hold, with Redis's own overhead attributed. Scheduled keys (a TTL: booking records kept
// for 30 days) pile up during a soak by design; their entries in the expiry table and their
// share of the main table must not count as kept memory, nor must the client buffers of the
// sampled instant — while a kept key that grows must still show.
import { describe, expect, it } from 'vitest';
import { keptBytes, type RedisOverhead } from '../../bench/soak/sample.js';

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
