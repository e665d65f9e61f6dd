// The growth verdict of the fuzz tests (test/helpers/growth.ts growthOfScale): work that a bound
// caps may grow faster than its input for one decade and pass; quadratic work fails.
import { describe, expect, it } from 'vitest';
import { growthOfScale, GROWTH_LIMIT } from '../helpers/growth.js';

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
