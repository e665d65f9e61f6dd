// Preloaded into the soak's web and worker processes (node --import, with --expose-gc): every
// SOAK_PROBE_MS it writes <SOAK_PROBE_DIR>/<pid>.json with the process's RSS, its heap used
// right after a full collection (what is retained: a leak shows there, not in the sawtooth of
// garbage between collections), and the event loop's delay p99 over the interval. Bench only.
import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setInterval } from 'node:timers';

const dir = process.env.SOAK_PROBE_DIR;
const every = Number(process.env.SOAK_PROBE_MS ?? 30000);
if (dir) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const file = join(dir, `${process.pid}.json`);
  const timer = setInterval(() => {
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
      lagP99Ms,
      lagMaxMs,
    });
    writeFileSync(`${file}.tmp`, line);
    renameSync(`${file}.tmp`, file);
  }, every);
  timer.unref();
}
