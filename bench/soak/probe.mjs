// Preloaded into the soak's web and worker processes (node --import, with --expose-gc): every
// SOAK_PROBE_MS it writes <SOAK_PROBE_DIR>/<pid>.json with the process's RSS, its heap used
// right after a full collection (what is retained: a leak shows there, not in the sawtooth of
// garbage between collections), and the event loop's delay p99 over the interval. Bench only.
// SOAK_HEAP_SNAPSHOTS=6,26 (probe ticks, 1-based): at those ticks, right after the collection,
// it also writes <SOAK_PROBE_DIR>/<pid>-<tick>.heapsnapshot (v8.writeHeapSnapshot: the process
// stops for a few seconds); bench/soak/heap-diff.ts compares two of them by constructor.
import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setInterval } from 'node:timers';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';

const dir = process.env.SOAK_PROBE_DIR;
const every = Number(process.env.SOAK_PROBE_MS ?? 30000);
if (dir) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const file = join(dir, `${process.pid}.json`);
  const snapshotAt = new Set(
    (process.env.SOAK_HEAP_SNAPSHOTS ?? '')
      .split(',')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0),
  );
  let tick = 0;
  const timer = setInterval(() => {
    tick += 1;
    // Read and reset the delay first: the collection below would count as one delayed tick.
    const lagP99Ms = delay.percentile(99) / 1e6;
    const lagMaxMs = delay.max / 1e6;
    delay.reset();
    globalThis.gc?.();
    const m = process.memoryUsage();
    const line = JSON.stringify({
      at: Date.now(),
      rss: m.rss,
      heapUsed: m.heapUsed,
      // Where RSS goes when the heap after collection is flat: V8's committed heap, memory
      // outside it (Buffers and native), or neither (the allocator's own).
      heapTotal: m.heapTotal,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      // V8's committed size per space: the young generation's semi-spaces are committed whole.
      spaces: Object.fromEntries(getHeapSpaceStatistics().map((x) => [x.space_name, x.space_size])),
      lagP99Ms,
      lagMaxMs,
    });
    writeFileSync(`${file}.tmp`, line);
    renameSync(`${file}.tmp`, file);
    if (snapshotAt.has(tick)) writeHeapSnapshot(join(dir, `${process.pid}-${tick}.heapsnapshot`));
  }, every);
  timer.unref();
}
