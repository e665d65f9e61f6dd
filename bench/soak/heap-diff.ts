// Compares V8 heap snapshots of one process (bench/soak/probe.mjs writes them with
// SOAK_HEAP_SNAPSHOTS) without a browser:
//   npx tsx bench/soak/heap-diff.ts a.heapsnapshot b.heapsnapshot [c.heapsnapshot]
// prints, per constructor (node type and name), the count and self size in each snapshot and the
// change, largest growth first. With three snapshots it also does the three-snapshot check:
// objects allocated between the first and second (V8 keeps an object's id for its life, and ids
// grow) that are still alive in the third — what a steady load leaves behind — by constructor,
// with the shortest retainer path from the GC roots for a few of them.
// Bench only; HEAP_DIFF_TOP (30) lines per table.
import { readFileSync } from 'node:fs';

interface Snapshot {
  file: string;
  strings: string[];
  nodes: Uint32Array | number[];
  edges: Uint32Array | number[];
  nodeFieldCount: number;
  edgeFieldCount: number;
  nodeTypes: string[];
  edgeTypes: string[];
  f: Record<string, number>;
  e: Record<string, number>;
  count: number;
  firstEdge: Uint32Array;
}

function load(file: string): Snapshot {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: {
      meta: {
        node_fields: string[];
        node_types: [string[], ...unknown[]];
        edge_fields: string[];
        edge_types: [string[], ...unknown[]];
      };
    };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const meta = raw.snapshot.meta;
  const f = Object.fromEntries(meta.node_fields.map((n, i) => [n, i]));
  const e = Object.fromEntries(meta.edge_fields.map((n, i) => [n, i]));
  const nodeFieldCount = meta.node_fields.length;
  const edgeFieldCount = meta.edge_fields.length;
  const count = raw.nodes.length / nodeFieldCount;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, at = 0; i < count; i++) {
    firstEdge[i] = at;
    at += raw.nodes[i * nodeFieldCount + f.edge_count!]! * edgeFieldCount;
    firstEdge[i + 1] = at;
  }
  return {
    file,
    strings: raw.strings,
    nodes: raw.nodes,
    edges: raw.edges,
    nodeFieldCount,
    edgeFieldCount,
    nodeTypes: meta.node_types[0],
    edgeTypes: meta.edge_types[0],
    f,
    e,
    count,
    firstEdge,
  };
}

const typeOf = (s: Snapshot, i: number) => s.nodeTypes[s.nodes[i * s.nodeFieldCount + s.f.type!]!]!;
const nameOf = (s: Snapshot, i: number) => s.strings[s.nodes[i * s.nodeFieldCount + s.f.name!]!]!;
const idOf = (s: Snapshot, i: number) => s.nodes[i * s.nodeFieldCount + s.f.id!]!;
const sizeOf = (s: Snapshot, i: number) => s.nodes[i * s.nodeFieldCount + s.f.self_size!]!;

/** A node's class: objects and closures by name, strings and code by type alone. */
function classOf(s: Snapshot, i: number): string {
  const type = typeOf(s, i);
  if (type === 'object' || type === 'closure' || type === 'native' || type === 'hidden' || type === 'array')
    return `${type} ${nameOf(s, i).slice(0, 60)}`;
  return type;
}

function census(s: Snapshot): Map<string, { n: number; bytes: number }> {
  const out = new Map<string, { n: number; bytes: number }>();
  for (let i = 0; i < s.count; i++) {
    const k = classOf(s, i);
    const c = out.get(k) ?? { n: 0, bytes: 0 };
    c.n += 1;
    c.bytes += sizeOf(s, i);
    out.set(k, c);
  }
  return out;
}

/** The shortest path from the root (node 0) to each node, over strong edges: parent node and edge. */
function parents(s: Snapshot): { node: Int32Array; edge: Int32Array } {
  const node = new Int32Array(s.count).fill(-1);
  const edge = new Int32Array(s.count).fill(-1);
  const queue = new Int32Array(s.count);
  let head = 0;
  let tail = 0;
  queue[tail++] = 0;
  node[0] = 0;
  const weak = s.edgeTypes.indexOf('weak');
  while (head < tail) {
    const from = queue[head++]!;
    for (let at = s.firstEdge[from]!; at < s.firstEdge[from + 1]!; at += s.edgeFieldCount) {
      if (s.edges[at + s.e.type!] === weak) continue;
      const to = s.edges[at + s.e.to_node!]! / s.nodeFieldCount;
      if (node[to] !== -1) continue;
      node[to] = from;
      edge[to] = at;
      queue[tail++] = to;
    }
  }
  return { node, edge };
}

function edgeName(s: Snapshot, at: number): string {
  const type = s.edgeTypes[s.edges[at + s.e.type!]!]!;
  const v = s.edges[at + s.e.name_or_index!]!;
  return type === 'element' || type === 'hidden' ? `[${v}]` : `.${s.strings[v]}`;
}

function pathTo(s: Snapshot, p: { node: Int32Array; edge: Int32Array }, i: number): string {
  const steps: string[] = [];
  for (let at = i; at !== 0 && p.node[at] !== -1 && steps.length < 40; at = p.node[at]!) {
    steps.push(`${edgeName(s, p.edge[at]!)} → ${classOf(s, at)}`);
  }
  return p.node[i] === -1 ? '(unreachable over strong edges)' : steps.reverse().join('\n      ');
}

const top = Number(process.env.HEAP_DIFF_TOP ?? 30);
const files = process.argv.slice(2);
if (files.length < 2) {
  process.stderr.write('usage: heap-diff.ts a.heapsnapshot b.heapsnapshot [c.heapsnapshot]\n');
  process.exit(2);
}
const snaps = files.map(load);
const censuses = snaps.map(census);
const first = censuses[0]!;
const last = censuses.at(-1)!;
const rows = [...new Set([...first.keys(), ...last.keys()])].map((k) => ({
  k,
  counts: censuses.map((c) => c.get(k)?.n ?? 0),
  bytes: censuses.map((c) => c.get(k)?.bytes ?? 0),
}));
const total = (c: Map<string, { n: number; bytes: number }>) =>
  [...c.values()].reduce((a, x) => ({ n: a.n + x.n, bytes: a.bytes + x.bytes }), { n: 0, bytes: 0 });
process.stdout.write(
  `snapshots: ${snaps.map((s, i) => `${s.file} (${total(censuses[i]!).n} nodes, ${(total(censuses[i]!).bytes / 1048576).toFixed(1)} MB)`).join(', ')}\n`,
);
const growth = (r: (typeof rows)[number]) => r.bytes.at(-1)! - r.bytes[0]!;
process.stdout.write(`\nby self size growth, first → last (count; kB):\n`);
for (const r of rows.sort((a, b) => growth(b) - growth(a)).slice(0, top)) {
  process.stdout.write(
    `  ${(growth(r) / 1024).toFixed(1).padStart(9)} kB  ${r.counts.join(' → ').padEnd(24)} ${r.k}\n`,
  );
}
process.stdout.write(`\nby count growth, first → last:\n`);
for (const r of rows
  .sort((a, b) => b.counts.at(-1)! - b.counts[0]! - (a.counts.at(-1)! - a.counts[0]!))
  .slice(0, top)) {
  process.stdout.write(
    `  ${String(r.counts.at(-1)! - r.counts[0]!).padStart(9)}  ${r.counts.join(' → ').padEnd(24)} ${r.k}\n`,
  );
}

if (snaps.length === 3) {
  const [a, b, c] = snaps as [Snapshot, Snapshot, Snapshot];
  let maxA = 0;
  for (let i = 0; i < a.count; i++) maxA = Math.max(maxA, idOf(a, i));
  let maxB = 0;
  for (let i = 0; i < b.count; i++) maxB = Math.max(maxB, idOf(b, i));
  // Alive in the third snapshot, allocated between the first and the second.
  const kept = new Map<string, { n: number; bytes: number; nodes: number[] }>();
  for (let i = 0; i < c.count; i++) {
    const id = idOf(c, i);
    if (id <= maxA || id > maxB) continue;
    const k = classOf(c, i);
    const x = kept.get(k) ?? { n: 0, bytes: 0, nodes: [] };
    x.n += 1;
    x.bytes += sizeOf(c, i);
    if (x.nodes.length < 3) x.nodes.push(i);
    kept.set(k, x);
  }
  const p = parents(c);
  process.stdout.write(
    `\nallocated between the first and second snapshot, still alive in the third (three-snapshot check):\n`,
  );
  const keptRows = [...kept.entries()].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, top);
  for (const [k, x] of keptRows) {
    process.stdout.write(
      `  ${(x.bytes / 1024).toFixed(1).padStart(9)} kB  ${String(x.n).padStart(7)}  ${k}\n`,
    );
  }
  const paths = Number(process.env.HEAP_DIFF_PATHS ?? 8);
  process.stdout.write(`\nretainer paths (shortest from the GC roots) of the largest ${paths}:\n`);
  for (const [k, x] of keptRows.slice(0, paths)) {
    process.stdout.write(`  ${k}:\n      ${pathTo(c, p, x.nodes[0]!)}\n`);
  }
}
