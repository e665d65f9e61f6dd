// The soak's verdicts: a least-squares slope per series after the warm-up, flatness within a
// band around the median, a ceiling. Pure functions of the samples (bench/soak.ts prints them).

export interface Point {
  /** Seconds since the load began. */
  t: number;
  y: number;
}

/** Least-squares slope of y over t (units of y per second); NaN with fewer than two points. */
export function slope(points: Point[]): number {
  const ps = points.filter((p) => Number.isFinite(p.y));
  if (ps.length < 2) return NaN;
  const mt = ps.reduce((a, p) => a + p.t, 0) / ps.length;
  const my = ps.reduce((a, p) => a + p.y, 0) / ps.length;
  let num = 0;
  let den = 0;
  for (const p of ps) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

export function medianOf(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export interface Verdict {
  series: string;
  ok: boolean;
  text: string;
}

/** Slope in MB per 10 minutes under `limit` (a series in MB). */
export function slopeVerdict(series: string, points: Point[], limitMbPer10Min: number): Verdict {
  const per10 = slope(points) * 600;
  const ok = Number.isFinite(per10) && per10 < limitMbPer10Min;
  const first = points[0]?.y ?? NaN;
  const last = points.at(-1)?.y ?? NaN;
  return {
    series,
    ok,
    text: `slope ${per10.toFixed(2)} MB/10 min (limit < ${limitMbPer10Min}); ${first.toFixed(1)} → ${last.toFixed(1)} MB`,
  };
}

/** Every point within ±`band` (0.05 = 5 %) of the series' median. */
export function flatVerdict(series: string, points: Point[], band: number, unit = ''): Verdict {
  const ys = points.map((p) => p.y).filter(Number.isFinite);
  const med = medianOf(ys);
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const worst = Math.max(Math.abs(hi - med), Math.abs(med - lo)) / med;
  const ok = ys.length > 0 && worst <= band;
  const per10 = slope(points) * 600;
  return {
    series,
    ok,
    text: `median ${med.toFixed(1)}${unit}, range ${lo.toFixed(1)}–${hi.toFixed(1)}${unit} (±${(100 * worst).toFixed(1)} %${Number.isFinite(band) ? `, limit ±${(100 * band).toFixed(0)} %` : ''}); slope ${per10.toFixed(1)}${unit}/10 min`,
  };
}

/** Every point under `limit`. */
export function ceilingVerdict(series: string, points: Point[], limit: number, unit: string): Verdict {
  const ys = points.map((p) => p.y).filter(Number.isFinite);
  const hi = Math.max(...ys);
  return {
    series,
    ok: ys.length > 0 && hi < limit,
    text: `max ${hi.toFixed(1)} ${unit}, median ${medianOf(ys).toFixed(1)} ${unit} (limit < ${limit} ${unit})`,
  };
}

export const verdictLine = (v: Verdict): string =>
  `${v.ok ? 'PASS' : 'FAIL'}  ${v.series.padEnd(28)} ${v.text}`;
