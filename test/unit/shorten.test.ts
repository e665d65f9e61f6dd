// shorten keeps at most `max` characters of a text, so it flattens only a prefix long enough to
// hold them: the same answer as flattening the whole text, for work that does not grow with it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shorten, singleLine } from '../../core/platform/text.js';
import { describeGrowth, growth } from '../helpers/growth.js';

/** The definition: the whole text flattened, then cut. */
function flattenedWhole(text: string, max: number): string {
  const flat = singleLine(text).replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

// Runs of white space and control characters of every length, surrogate pairs (a prefix may cut
// one), line and paragraph separators, NUL and NEL, and plain letters.
const unit = fc.constantFrom(
  'a',
  'Zé',
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '\u2028',
  '\u2029',
  '\u0085',
  '\u0000',
  '😀',
  '\u00a0',
  '.',
);
const text = fc
  .array(fc.tuple(unit, fc.integer({ min: 1, max: 400 })), { maxLength: 40 })
  .map((parts) => parts.map(([u, n]) => u.repeat(n)).join(''));

describe('shorten', () => {
  it('answers what flattening the whole text answers, wherever its prefixes stop', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 600 }), (t, max) => {
        expect(shorten(t, max)).toBe(flattenedWhole(t, max));
      }),
      { numRuns: 2_000 },
    );
  });

  it('cuts a prefix that ends inside a run of white space or a surrogate pair as the whole text would', () => {
    // The first prefix flattened is 2 × max characters (64 at least): runs across that edge.
    const max = 40;
    for (const t of [
      `${'a'.repeat(79)}${' '.repeat(500)}b${'c'.repeat(100)}`,
      `${' '.repeat(80)}${'x'.repeat(100)}`,
      `${'\n'.repeat(5_000)}tail`,
      `${'a'.repeat(79)}😀${'b'.repeat(100)}`,
      `${'a'.repeat(39)}${' '.repeat(41)}${'b'.repeat(100)}`,
    ]) {
      expect(shorten(t, max)).toBe(flattenedWhole(t, max));
    }
    expect(shorten(`${' '.repeat(1_000)}x`, 10)).toBe('x');
    expect(shorten(`${'word '.repeat(1_000)}`, 12)).toBe('word word w…');
  });

  it('costs about the same on 4,000,000 characters as on 400,000 (flattening them all cost 11.8 times as much)', () => {
    // Warm first, past the one unmeasured small run each step makes: a hundred calls let V8 optimise.
    for (let i = 0; i < 100; i++) shorten(`warm  up\n${'x'.repeat(1_000)}${i}`, 400);
    // The smallest of five measurements: a collection that falls in one large run only ever raises it.
    const g = Array.from({ length: 5 }, () =>
      growth(
        [4_000_000],
        // Flat, as a parsed body's strings are (V8 flattens a built-up string whole on its first slice).
        (length, variant) =>
          JSON.parse(
            JSON.stringify(
              `${'Caller said: '.repeat(Math.ceil(length / 13)).slice(0, length - 1)}${variant}`,
            ),
          ) as string,
        (t) => shorten(t, 400),
      ),
    ).reduce((a, b) => (b.ratio < a.ratio ? b : a));
    console.log(`shorten: ${describeGrowth(g)}`);
    expect(g.ratio, describeGrowth(g)).toBeLessThan(4);
  });
});
