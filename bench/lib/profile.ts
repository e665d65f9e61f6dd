// A short reading of a V8 CPU profile (node --cpu-prof): where the busy time went, by area
// (a package under node_modules, a folder of ours, Node's internals, GC) and by function.
//   npx tsx bench/lib/profile.ts bench/results/profiles/<file>.cpuprofile
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Phase } from './phases.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function area(url: string, fn: string): string {
  if (fn === '(idle)') return '(idle)';
  if (fn === '(garbage collector)') return '(garbage collector)';
  if (fn === '(program)') return '(program: native, not JS)';
  if (url === '') return '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const ours = /\/(api|core\/[^/]+|jobs|workers|dashboard|scripts|bench)\//.exec(url);
  if (ours) return ours[1]!;
  return url.split('/').slice(-2).join('/');
}

/** A function as the summaries name it: its name, file (from the package or our folder) and line. */
function frameKey(functionName: string, url: string, lineNumber: number): string {
  const where =
    url === ''
      ? ''
      : ` ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(api|core|jobs|workers|bench)\//, '$1/')}:${lineNumber + 1}`;
  return `${functionName || '(anonymous)'}${where}`;
}

/** Busy (non-idle) microseconds of a profile. */
function busyMicros(path: string): number {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  return profile.samples.reduce((sum, id, i) => sum + (idle.has(id) ? 0 : (profile.timeDeltas[i] ?? 0)), 0);
}

/** The main thread's profile among a process's (one file per thread): the busiest one. */
export function busiestProfile(dir: string): string | undefined {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f));
  return files.map((f) => [f, busyMicros(f)] as const).sort((a, b) => b[1] - a[1])[0]?.[0];
}

export function summariseProfile(path: string, top = 12): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const a = area(url, functionName);
    total += us;
    if (a === '(idle)') {
      idle += us;
      continue;
    }
    areas.set(a, (areas.get(a) ?? 0) + us);
    const key = frameKey(functionName, url, lineNumber);
    fns.set(key, (fns.get(key) ?? 0) + us);
  }
  // Node's internals and native code, charged to the first frame above them that is a package
  // or ours: e.g. the socket writes a driver makes count for the driver.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owner = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      const a = area(f.url, f.functionName);
      if (!a.startsWith('node:') && !a.startsWith('(')) return a;
    }
    const f = byId.get(id)!.callFrame;
    return area(f.url, f.functionName);
  };
  const owners = new Map<string, number>();
  for (const [id, us] of self) {
    const a = owner(id);
    if (a !== '(idle)') owners.set(a, (owners.get(a) ?? 0) + us);
  }
  const busy = total - idle;
  const pct = (us: number) => `${((100 * us) / Math.max(1, busy)).toFixed(1)}%`.padStart(6);
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    `profile ${basename(path)}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (${((100 * busy) / Math.max(1, total)).toFixed(0)}%)`,
    '  busy time by area (self):',
    ...sorted(areas).map(([k, v]) => `   ${pct(v)}  ${k}`),
    '  busy time by the package (or folder of ours) on the stack, Node internals included:',
    ...sorted(owners).map(([k, v]) => `   ${pct(v)}  ${k}`),
    '  busiest functions (self):',
    ...sorted(fns).map(([k, v]) => `   ${pct(v)}  ${k.slice(0, 140)}`),
  ].join('\n');
}

interface PhaseTotals {
  units: number;
  busy: number;
  areas: Map<string, number>;
  fns: Map<string, number>;
}

/**
 * The busy time of each phase of a profiled process (bench/lib/phases.ts): its samples cut by the
 * phases' times, summed by area and by function (self), with the units the phase answered.
 */
export function phaseTotals(
  profile: CpuProfile & { startTime: number },
  phases: Phase[],
): Map<string, PhaseTotals> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, PhaseTotals>();
  for (const p of phases) {
    const t = totals.get(p.label) ?? { units: 0, busy: 0, areas: new Map(), fns: new Map() };
    t.units += p.units;
    totals.set(p.label, t);
  }
  const ordered = [...phases].sort((a, b) => a.start - b.start);
  let at = profile.startTime;
  let next = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    while (next < ordered.length && ordered[next]!.end < at) next++;
    const phase = ordered[next];
    if (phase === undefined) break;
    if (at < phase.start) continue;
    const { functionName, url, lineNumber } = byId.get(profile.samples[i]!)!.callFrame;
    const a = area(url, functionName);
    if (a === '(idle)') continue;
    const t = totals.get(phase.label)!;
    t.busy += us;
    t.areas.set(a, (t.areas.get(a) ?? 0) + us);
    const key = frameKey(functionName, url, lineNumber);
    t.fns.set(key, (t.fns.get(key) ?? 0) + us);
  }
  return totals;
}

/**
 * Phase `a` against phase `b` of one profiled process: the busy microseconds a unit of each, and
 * by area and by function the difference a unit, largest first (a profiled process runs slower
 * than an unprofiled one, for both alike: the sizes are relative).
 */
export function comparePhases(path: string, phases: Phase[], a: string, b: string, top = 20): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile & { startTime: number };
  const totals = phaseTotals(profile, phases);
  const ta = totals.get(a);
  const tb = totals.get(b);
  // A step with no busy sample ran outside this profile's time (another run's profile).
  if (
    ta === undefined ||
    tb === undefined ||
    ta.units === 0 ||
    tb.units === 0 ||
    ta.busy === 0 ||
    tb.busy === 0
  ) {
    return `phases ${a} / ${b}: not both in this profile`;
  }
  const perUnit = (us: number, t: PhaseTotals) => us / t.units;
  const table = (
    what: string,
    [ma, unitsA]: [Map<string, number>, number],
    [mb, unitsB]: [Map<string, number>, number],
  ): string[] => {
    const rows = [...new Set([...ma.keys(), ...mb.keys()])].map((k) => {
      const va = (ma.get(k) ?? 0) / unitsA;
      const vb = (mb.get(k) ?? 0) / unitsB;
      return { k, va, vb, d: va - vb };
    });
    rows.sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
    const f = (n: number) => n.toFixed(1).padStart(8);
    return [
      `  ${what}, µs a unit: ${'step'.padStart(8)} ${'baseline'.padStart(8)}  difference (step: "${a}", baseline: "${b}")`,
      ...rows
        .filter((r) => r.va !== 0 || r.vb !== 0) // a thread idle in both
        .slice(0, top)
        .map((r) => `    ${f(r.va)} ${f(r.vb)} ${f(r.d)}  ${r.k.slice(0, 120)}`),
    ];
  };
  // The CPU of each kind of thread (the profile has the main thread's only), over the units of
  // the phases that kept it.
  const threadsOf = (
    label: string,
    part: 'threads' | 'kernel',
  ): { units: number; byThread: Map<string, number> } | undefined => {
    const timed = phases.filter((p) => p.label === label && p[part] !== undefined);
    if (timed.length === 0) return undefined;
    const byThread = new Map<string, number>();
    for (const p of timed) {
      for (const [name, us] of Object.entries(p[part]!)) byThread.set(name, (byThread.get(name) ?? 0) + us);
    }
    return { units: timed.reduce((n, p) => n + p.units, 0), byThread };
  };
  const threadTable = (part: 'threads' | 'kernel', what: string): string[] => {
    const threadsA = threadsOf(a, part);
    const threadsB = threadsOf(b, part);
    return threadsA === undefined || threadsB === undefined || threadsA.units === 0 || threadsB.units === 0
      ? []
      : table(what, [threadsA.byThread, threadsA.units], [threadsB.byThread, threadsB.units]);
  };
  const byThread = [
    ...threadTable('threads', 'by thread (CPU, every thread of the process)'),
    ...threadTable('kernel', 'of which in the kernel (system calls), by thread'),
  ];
  return [
    `phases "${a}" (${ta.units} units, ${perUnit(ta.busy, ta).toFixed(1)} µs busy a unit) against "${b}" (${tb.units}, ${perUnit(tb.busy, tb).toFixed(1)} µs): ` +
      `${(perUnit(ta.busy, ta) - perUnit(tb.busy, tb)).toFixed(1)} µs a unit more`,
    ...table('by area (self)', [ta.areas, ta.units], [tb.areas, tb.units]),
    ...table('by function (self)', [ta.fns, ta.units], [tb.fns, tb.units]),
    ...byThread,
  ].join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of process.argv.slice(2)) process.stdout.write(`${summariseProfile(file)}\n`);
}
