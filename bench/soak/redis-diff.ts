// Compares two of the soak's kept-key dumps (SOAK_REDIS_KEYS=1 writes redis-kept-<n>.json):
//   npx tsx bench/soak/redis-diff.ts redis-kept-8.json redis-kept-20.json
// prints the keys present in both whose MEMORY USAGE changed most, then the totals by key shape
// (ids replaced by *), so a key that grows in size shows apart from keys that come and go.
// Bench only; REDIS_DIFF_TOP (25) lines per table.
import { readFileSync } from 'node:fs';

interface Dump {
  t: number;
  usedMb: number;
  keys: Record<string, number>;
}

const [fa, fb] = process.argv.slice(2);
if (fa === undefined || fb === undefined) {
  process.stderr.write('usage: redis-diff.ts a.json b.json\n');
  process.exit(2);
}
const a = JSON.parse(readFileSync(fa, 'utf8')) as Dump;
const b = JSON.parse(readFileSync(fb, 'utf8')) as Dump;
const top = Number(process.env.REDIS_DIFF_TOP ?? 25);
const kb = (n: number) => (n / 1024).toFixed(1);
const sum = (d: Dump) => Object.values(d.keys).reduce((x, y) => x + y, 0);

/** A key's shape: its prefix dropped, every segment that looks like an id replaced by `*`. */
const shape = (key: string) =>
  key
    .split(':')
    .slice(1)
    .map((seg) =>
      seg.includes('|')
        ? `${seg.slice(0, seg.indexOf('|'))}|*`
        : /^\d+$|^[0-9a-f-]{16,}$|^[A-Za-z0-9_-]{20,}$|^\+\d+$/i.test(seg)
          ? '*'
          : seg,
    )
    .join(':');

process.stdout.write(
  `${fa}: t=${a.t.toFixed(0)} s, used ${a.usedMb.toFixed(2)} MB, ${Object.keys(a.keys).length} kept keys, ${kb(sum(a))} kB\n` +
    `${fb}: t=${b.t.toFixed(0)} s, used ${b.usedMb.toFixed(2)} MB, ${Object.keys(b.keys).length} kept keys, ${kb(sum(b))} kB\n`,
);
const both = Object.keys(b.keys)
  .filter((k) => k in a.keys)
  .map((k) => ({ k, d: b.keys[k]! - a.keys[k]!, from: a.keys[k]!, to: b.keys[k]! }))
  .sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
process.stdout.write(`\nkeys in both, largest change first (bytes):\n`);
for (const r of both.slice(0, top)) {
  process.stdout.write(
    `  ${String(r.d).padStart(9)}  ${String(r.from).padStart(9)} → ${String(r.to).padEnd(9)} ${r.k}\n`,
  );
}
const shapes = new Map<string, { a: number; b: number; na: number; nb: number }>();
for (const [d, side] of [
  [a, 'a'],
  [b, 'b'],
] as const) {
  for (const [k, bytes] of Object.entries(d.keys)) {
    const s = shapes.get(shape(k)) ?? { a: 0, b: 0, na: 0, nb: 0 };
    s[side] += bytes;
    if (side === 'a') s.na += 1;
    else s.nb += 1;
    shapes.set(shape(k), s);
  }
}
process.stdout.write(`\nby key shape, largest change first (keys; kB):\n`);
for (const [k, s] of [...shapes.entries()]
  .sort((x, y) => Math.abs(y[1].b - y[1].a) - Math.abs(x[1].b - x[1].a))
  .slice(0, top)) {
  process.stdout.write(
    `  ${kb(s.b - s.a).padStart(8)} kB  ${`${s.na} → ${s.nb}`.padEnd(13)} ${kb(s.a).padStart(8)} → ${kb(s.b).padEnd(8)} ${k}\n`,
  );
}
