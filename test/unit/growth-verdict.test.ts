// The growth verdict of the fuzz tests (test/helpers/growth.ts growthOfScale): work that a bound
// caps may grow faster than its input for one decade and pass; quadratic work fails.
import { describe, expect, it } from 'vitest';
import { growthOfScale, GROWTH_LIMIT } from '../helpers/growth.js';

/** A text of `scale` × 150 characters (each one new, as the fuzz inputs are). */
const make = (scale: number, variant: number) => `${variant}:`.padEnd(150 * scale, 'x');
let sink = 0;
/** `n` squared steps of arithmetic, n = the text's length capped at `cap`. */
const squareUpTo = (cap: number) => (text: string) => {
  const n = Math.min(text.length, cap);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) sink += (i ^ j) & 1;
};

describe('growthOfScale', () => {
  it('passes work that grows fast until a bound caps it (a search giving up after so many tries)', () => {
    const measured = growthOfScale(make, (t) => t.length, squareUpTo(1_500));
    expect(measured.ratio).toBeLessThanOrEqual(GROWTH_LIMIT);
    // The decade that decided is the one past the bound.
    expect(measured.smallSize).toBe(1_500);
  });

  it('fails quadratic work, whichever decade is measured', () => {
    const measured = growthOfScale(make, (t) => t.length, squareUpTo(Infinity));
    expect(measured.ratio).toBeGreaterThan(GROWTH_LIMIT);
    expect(sink).toBeGreaterThan(0);
  });
});
