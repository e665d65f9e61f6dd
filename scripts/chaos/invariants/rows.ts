// How an invariant is reported (one row: what was expected, what was found) and the counting
// the checks share.

export interface Row {
  name: string;
  expected: string;
  actual: string;
  ok: boolean;
}

export const row = (name: string, expected: string | number, actual: string | number, ok: boolean): Row => ({
  name,
  expected: String(expected),
  actual: String(actual),
  ok,
});

/** "n" when every item passed, else the failures first (a few of them named). */
export function summary(total: number, bad: string[]): string {
  if (bad.length === 0) return String(total);
  return `${total - bad.length}/${total}; ✗ ${bad.slice(0, 3).join(', ')}${bad.length > 3 ? ', …' : ''}`;
}

export function timesBy(entries: Array<[string, number]>): Map<string, number[]> {
  const times = new Map<string, number[]>();
  for (const [k, at] of entries) times.set(k, [...(times.get(k) ?? []), at]);
  return times;
}

export function countBy(keys: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}
