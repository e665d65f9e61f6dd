// The bench's alternation of steps (bench/lib/measure.ts alternate): each step is probed and
// warmed once, unmeasured, then the rounds run every step measured, in the given order and in
// the reverse order by turns, so that neither a warm-up nor a machine drifting over the run is
// counted against the step that happens to come first.
import { describe, expect, it } from 'vitest';
import { alternate, type Rate } from '../../bench/lib/measure.js';

/** The steps' order, and its reverse. */
const ORDER = ['a', 'b', 'c'];
const REVERSE = ['c', 'b', 'a'];

const rate = (n: number): Rate => ({ rate: n, ok: n, failed: 0, seconds: 1, p50: 1, p95: 1, p99: 1 });

describe('alternate', () => {
  it('tells each step which runs are measured, and runs the rounds in the given order and its reverse by turns', async () => {
    const calls: string[] = [];
    const step = (name: string, perSecond: number) => async (amount: number, measured: boolean) => {
      calls.push(`${name}${measured ? '' : ' (warm-up)'}`);
      return rate(measured ? perSecond : amount);
    };
    const rounds: Array<Record<string, Rate>> = [];
    const out = await alternate(
      4,
      1,
      { a: step('a', 10), b: step('b', 20), c: step('c', 30) },
      { log: (_round, got) => rounds.push(got) },
    );
    expect(calls).toEqual([
      ...ORDER.flatMap((name) => [`${name} (warm-up)`, `${name} (warm-up)`]),
      ...[...ORDER, ...REVERSE, ...ORDER, ...REVERSE],
    ]);
    // Every round's rate, by step, in the order of the rounds; the log gets each round whole.
    expect(out.a.map((r) => r.rate)).toEqual([10, 10, 10, 10]);
    expect(out.c.map((r) => r.rate)).toEqual([30, 30, 30, 30]);
    expect(rounds).toHaveLength(4);
    expect(Object.keys(rounds[1]!).sort()).toEqual(['a', 'b', 'c']);
  });
});
