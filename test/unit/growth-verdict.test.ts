// The growth verdict of the fuzz tests (test/helpers/growth.ts growthOfScale): work that a bound
// caps may grow faster than its input for one decade and pass; quadratic work fails. And what a
// cost is: this thread's time, not V8's other threads' CPU beside it, nor a first call's compiling.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { costOf, growthOfScale, GROWTH_LIMIT } from '../helpers/growth.js';

/** A text of `scale` × 20 characters (each one new, as the fuzz inputs are). */
const make = (scale: number, variant: number) => `${variant}:`.padEnd(20 * scale, 'x');
let sink = 0;
/**
 * `steps` × n² steps of arithmetic, n = the text's length capped at `cap`. Enough steps that the
 * small side costs well over the helper's 0.05 ms resolution (which it adds to both sides) and over
 * what a loaded machine adds to a short run. The sum stays a small integer, so every step costs the
 * same in every run (past 2^30 it would become a heap number, and the loop four times as slow).
 */
const squareUpTo = (cap: number, steps: number) => (text: string) => {
  const n = Math.min(text.length, cap);
  for (let i = 0; i < n; i++) for (let j = 0; j < n * steps; j++) sink = (sink + ((i ^ j) & 1)) & 0x3fffffff;
};

describe('growthOfScale', () => {
  it('passes work that grows fast until a bound caps it (a search giving up after so many tries)', () => {
    // n² up to 200 characters, a hundredfold from 20 to 200, then flat.
    const measured = growthOfScale(make, (t) => t.length, squareUpTo(200, 1_000));
    expect(measured.ratio).toBeLessThanOrEqual(GROWTH_LIMIT);
  });

  it('fails quadratic work, whichever decade is measured', () => {
    // 300 steps: the small side of the first decade (20 characters) about 0.2 ms. At 100 (0.08 ms)
    // a CI run under load measured 29.5 for this hundredfold, the small runs three times their cost.
    const measured = growthOfScale(make, (t) => t.length, squareUpTo(Infinity, 300));
    expect(measured.ratio).toBeGreaterThan(GROWTH_LIMIT);
    expect(sink).toBeGreaterThan(0);
  });
});

describe('a cost', () => {
  it('is never more than the wall clock it took, whatever other threads of the process spend beside it', async () => {
    // A thread of the process busy on the other core, as V8's marker and compiler threads are.
    const busy = new Worker('const end = Date.now() + 2_000; while (Date.now() < end);', { eval: true });
    try {
      await new Promise((resolve) => busy.once('online', resolve));
      const before = process.cpuUsage();
      const started = performance.now();
      const cost = costOf(() => {
        const end = performance.now() + 40;
        while (performance.now() < end);
      });
      const wall = performance.now() - started;
      const used = process.cpuUsage(before);
      console.log(
        `a cost beside a busy thread: ${cost.toFixed(1)} ms over ${wall.toFixed(1)} ms of wall clock, ` +
          `the process's CPU ${((used.user + used.system) / 1000).toFixed(1)} ms`,
      );
      expect(cost).toBeLessThanOrEqual(wall);
      expect(cost).toBeGreaterThan(0);
    } finally {
      await busy.terminate();
    }
  });

  it('leaves out the first call’s one-time work: the large run is not the first', () => {
    const work = (characters: number) => {
      for (let i = 0; i < characters * 2_000; i++) sink = (sink + (i & 1)) & 0x3fffffff;
    };
    let ready = false;
    const linear = (text: string) => {
      if (!ready) {
        // What a first call pays once (compiling, a cache filled), as much as 5,000 characters;
        // the same loop as every call's, so the calls after it all run it compiled alike.
        work(5_000);
        ready = true;
      }
      work(text.length);
    };
    const measured = growthOfScale(make, (t) => t.length, linear);
    // Counted in the large run it would make the first repetition's ratio about 25 times too high.
    expect(measured.tries).toBe(1);
    expect(measured.ratio).toBeLessThanOrEqual(GROWTH_LIMIT);
  });
});
