// The table of bench/fresh-clones.sh: one row per id, each run's figure (the value where the
// target is on the value or there is no baseline, else the ratio; ✗ where the run missed the
// target) and their median, as Markdown. Usage: node bench/fresh-clones-table.mjs OUT
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2] ?? '/tmp/bench-fresh';
const runs = [];
for (let i = 1; existsSync(join(out, `run-${i}.json`)); i++)
  runs.push(JSON.parse(readFileSync(join(out, `run-${i}.json`), 'utf8')));
if (runs.length === 0) throw new Error(`no run-1.json in ${out}`);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (n) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));
console.log(`| id | target | ${runs.map((_, i) => `run ${i + 1}`).join(' | ')} | median |`);
console.log(`|---|---|${runs.map(() => '---').join('|')}|---|`);
for (const id of [...new Set(runs.flatMap((r) => r.map((x) => x.id)))]) {
  const rows = runs.map((r) => r.find((x) => x.id === id));
  const first = rows.find(Boolean);
  const onValue = (first.target ?? '').startsWith('value') || first.ratio == null;
  const unit = onValue ? ` ${first.unit}` : '';
  const figures = rows.map((x) => (x === undefined ? undefined : onValue ? x.value : x.ratio));
  const cells = rows.map((x, i) =>
    x === undefined ? '—' : `${fmt(figures[i])}${unit}${x.met === false ? ' ✗' : ''}`,
  );
  const med = median(figures.filter((f) => f !== undefined));
  console.log(`| \`${id}\` | ${first.target ?? ''} | ${cells.join(' | ')} | **${fmt(med)}${unit}** |`);
}
