// The bench's one table: a row per same-run ratio (the median of the rounds' ratios, with their
// range), its target and whether it is met; printed as text and written as JSON.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { median, range } from './measure.js';

export interface Run {
  value: number;
  baseline: number;
  ratio: number;
}

export interface Target {
  /** ≥ or ≤ … */
  op: '>=' | '<=' | '<';
  limit: number;
  /** What the target is about: the ratio (default) or the value itself. */
  on?: 'ratio' | 'value';
}

export interface Row {
  id: string;
  /** What `value` measures and in what unit, e.g. "create-outbound-call req/s". */
  label: string;
  unit: string;
  /** What `baseline` measures, e.g. "its own operations issued directly, /s". */
  baselineLabel: string;
  /** Median of the rounds' values, baselines and ratios. */
  value: number;
  baseline: number;
  ratio: number;
  runs: Run[];
  target?: Target;
  /** Said beside the row (what bounds it, a caveat). */
  note?: string;
}

/** A row from per-round values and baselines (same round, same order). */
export function ratioRow(
  fields: Omit<Row, 'value' | 'baseline' | 'ratio' | 'runs'>,
  values: number[],
  baselines: number[],
): Row {
  const runs = values.map((value, i) => ({ value, baseline: baselines[i]!, ratio: value / baselines[i]! }));
  return {
    ...fields,
    value: median(values),
    baseline: median(baselines),
    ratio: median(runs.map((r) => r.ratio)),
    runs,
  };
}

export function passes(row: Row): boolean | undefined {
  const t = row.target;
  if (t === undefined) return undefined;
  const x = t.on === 'value' ? row.value : row.ratio;
  if (!Number.isFinite(x)) return false;
  return t.op === '>=' ? x >= t.limit : t.op === '<=' ? x <= t.limit : x < t.limit;
}

const num = (x: number): string => {
  if (!Number.isFinite(x)) return '—';
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
};

const targetText = (t: Target | undefined): string =>
  t === undefined
    ? ''
    : `${t.on === 'value' ? 'value ' : ''}${t.op === '>=' ? '≥' : t.op === '<=' ? '≤' : '<'} ${t.limit}`;

/** The table as fixed-width text; notes follow under it, numbered. */
export function formatTable(rows: Row[]): string {
  const header = ['id', 'measure', 'value', 'baseline', 'ratio', 'range', 'n', 'target', ''];
  const notes: string[] = [];
  const body = rows.map((r) => {
    const [lo, hi] = range(r.runs.map((x) => x.ratio));
    const ok = passes(r);
    let label = `${r.label} ÷ ${r.baselineLabel}`;
    if (r.note !== undefined) {
      notes.push(r.note);
      label += ` [${notes.length}]`;
    }
    return [
      r.id,
      label,
      `${num(r.value)} ${r.unit}`.trim(),
      num(r.baseline),
      num(r.ratio),
      r.runs.length > 1 ? `${num(lo)}–${num(hi)}` : '',
      String(r.runs.length),
      targetText(r.target),
      ok === undefined ? '' : ok ? '✓' : '✗',
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i >= 2 && i <= 6 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [
    line(header),
    line(widths.map((w) => '─'.repeat(w))),
    ...body.map(line),
    '',
    ...notes.map((n, i) => `[${i + 1}] ${n}`),
  ].join('\n');
}

/** The rows as JSON: `{id, value, baseline, ratio, runs, ...}` each (medians; `runs` per round). */
export function writeJson(path: string, rows: Row[], meta: Record<string, unknown>): void {
  mkdirSync(dirname(path), { recursive: true });
  const out = rows.map((r) => ({
    id: r.id,
    value: r.value,
    baseline: r.baseline,
    ratio: r.ratio,
    runs: r.runs,
    label: r.label,
    unit: r.unit,
    baseline_label: r.baselineLabel,
    range: range(r.runs.map((x) => x.ratio)),
    ...(r.target === undefined
      ? {}
      : { target: `${r.target.on ?? 'ratio'} ${r.target.op} ${r.target.limit}`, met: passes(r) }),
    ...(r.note === undefined ? {} : { note: r.note }),
  }));
  writeFileSync(path, `${JSON.stringify(out, null, 2)}\n`);
  writeFileSync(path.replace(/\.json$/, '.meta.json'), `${JSON.stringify(meta, null, 2)}\n`);
}
