// A profiled bench scenario cuts its web process's one V8 profile by step (bench/lib/phases.ts):
// the route's samples apart from those of the bare handler served by the same process, each
// divided by the units that step answered. A profile built by hand, whose samples fall before,
// in, between and after two phases, checks the cut.
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { threadCpuMicros } from '../../bench/lib/measure.js';
import { PhaseLog, readPhases, type Phase } from '../../bench/lib/phases.js';
import { comparePhases, phaseTotals } from '../../bench/lib/profile.js';

const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9 });
const profile = {
  startTime: 1_000,
  nodes: [
    { id: 1, callFrame: frame('(root)', ''), children: [2, 3, 4] },
    { id: 2, callFrame: frame('(idle)', '') },
    { id: 3, callFrame: frame('dispatch', 'file:///x/node_modules/koa-compose/index.js') },
    { id: 4, callFrame: frame('handler', 'file:///x/main/dist/api/router.js') },
  ],
  // Sample i is at startTime plus the deltas up to and including its own, and counts its own delta.
  // times:   1010 1020 1030(idle) 1040 1050 1060 1070 1080 1090
  samples: [3, 4, 2, 3, 4, 4, 3, 4, 3],
  timeDeltas: [10, 10, 10, 10, 10, 10, 10, 10, 10],
};
// The route from 1015 to 1045 (its samples at 1020, 1030 idle, 1040), the bare handler from
// 1055 to 1075 (1060, 1070); the samples at 1010, 1050, 1080 and 1090 are in no phase.
const phases: Phase[] = [
  { label: 'route', process: 'web', start: 1_015, end: 1_045, units: 2 },
  { label: 'bare', process: 'web', start: 1_055, end: 1_075, units: 4 },
];

const dir = mkdtempSync(join(tmpdir(), 'profile-phases-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a profile cut by the scenario's steps", () => {
  it('counts each busy sample in the phase it falls in, idle and outside samples in none', () => {
    const totals = phaseTotals(profile, phases);
    const route = totals.get('route')!;
    const bare = totals.get('bare')!;
    expect(route.units).toBe(2);
    expect(route.busy).toBe(20);
    expect(Object.fromEntries(route.areas)).toEqual({ api: 10, 'koa-compose': 10 });
    expect(bare.units).toBe(4);
    expect(bare.busy).toBe(20);
    expect(Object.fromEntries(bare.areas)).toEqual({ api: 10, 'koa-compose': 10 });
    expect([...bare.fns.keys()].sort()).toEqual([
      'dispatch koa-compose/index.js:10',
      'handler api/router.js:10',
    ]);
  });

  it("prints each phase's busy time a unit and the difference by area", () => {
    const path = join(dir, 'web.cpuprofile');
    writeFileSync(path, JSON.stringify(profile));
    const text = comparePhases(path, phases, 'route', 'bare');
    // 20 µs over 2 deliveries against 20 µs over 4: 10 against 5 a unit.
    expect(text).toContain(
      '"route" (2 units, 10.0 µs busy a unit) against "bare" (4, 5.0 µs): 5.0 µs a unit more',
    );
    expect(text).toMatch(/ {4}5\.0 {6}2\.5 {6}2\.5 {2}koa-compose/);
    expect(comparePhases(path, phases, 'route', 'absent')).toContain('not both in this profile');
    // Steps stamped after the profile ended (a later run's) are in no sample of it.
    const later = phases.map((p) => ({ ...p, start: p.start + 10_000, end: p.end + 10_000 }));
    expect(comparePhases(path, later, 'route', 'bare')).toContain('not both in this profile');
  });

  it('is written by the scenario only when profiling, and read back by the bench', async () => {
    const quiet = new PhaseLog(undefined, [['route', 'bare']]);
    const web = { name: 'web', pid: process.pid };
    expect(await quiet.time('route', web, () => Promise.resolve({ ok: 3 }))).toEqual({ ok: 3 });
    const logging = new PhaseLog(join(dir, 'scenario.phases.json'), [['route', 'bare']]);
    // A warm-up (not measured) runs, and is not noted.
    expect(await logging.time('route', web, () => Promise.resolve({ ok: 100 }), false)).toEqual({ ok: 100 });
    expect(readPhases('scenario', dir)).toBeUndefined();
    await logging.time('route', web, () => Promise.resolve({ ok: 3 }));
    const read = readPhases('scenario', dir)!;
    expect(read.compare).toEqual([['route', 'bare']]);
    expect(read.phases).toHaveLength(1);
    expect(read.phases[0]).toMatchObject({ label: 'route', process: 'web', units: 3 });
    expect(read.phases[0]!.end).toBeGreaterThanOrEqual(read.phases[0]!.start);
    expect(readPhases('other', dir)).toBeUndefined();
  });

  it("adds each kind of thread's CPU a unit where both steps kept it", () => {
    const path = join(dir, 'web-threads.cpuprofile');
    writeFileSync(path, JSON.stringify(profile));
    const timed: Phase[] = [
      {
        ...phases[0]!,
        threads: { MainThread: 40, V8Worker: 10, SignalInspector: 0 },
        kernel: { MainThread: 30 },
      },
      {
        ...phases[1]!,
        threads: { MainThread: 40, V8Worker: 4, SignalInspector: 0 },
        kernel: { MainThread: 8 },
      },
    ];
    const text = comparePhases(path, timed, 'route', 'bare');
    // 40 and 10 µs over 2 deliveries against 40 and 4 over 4: 20 against 10, and 5 against 1.
    expect(text).toContain('by thread (CPU, every thread of the process)');
    expect(text).toMatch(/ 20\.0 {5}10\.0 {5}10\.0 {2}MainThread/);
    expect(text).toMatch(/ 5\.0 {6}1\.0 {6}4\.0 {2}V8Worker/);
    expect(text).not.toContain('SignalInspector'); // idle in both
    // The kernel's part: 30 µs over 2 deliveries against 8 over 4.
    const kernel = text.slice(text.indexOf('of which in the kernel'));
    expect(kernel).toMatch(/ 15\.0 {6}2\.0 {5}13\.0 {2}MainThread/);
    // Steps from a file written before threads were kept print no such table.
    expect(comparePhases(path, phases, 'route', 'bare')).not.toContain('by thread');
  });

  it("reads this process's threads, and a step keeps what they used", async () => {
    const { all: before, kernel: kernelBefore } = threadCpuMicros(process.pid);
    expect(Object.keys(before).length).toBeGreaterThan(0);
    expect(Object.keys(kernelBefore)).toEqual(Object.keys(before));
    expect(threadCpuMicros(2 ** 22 + 12_345)).toEqual({ all: {}, kernel: {} }); // no such process
    const logging = new PhaseLog(join(dir, 'threads.phases.json'), [['busy', 'idle']]);
    await logging.time('busy', { name: 'test', pid: process.pid }, async () => {
      // 60 ms of this thread's CPU, however busy the machine (ticks are 10 ms).
      const t0 = process.threadCpuUsage();
      for (let spent = 0; spent < 60_000;) {
        const used = process.threadCpuUsage(t0);
        spent = used.user + used.system;
      }
      return { ok: 1 };
    });
    const [busy] = readPhases('threads', dir)!.phases;
    const threads = busy!.threads!;
    const total = Object.values(threads).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(40_000);
    for (const us of Object.values(threads)) expect(us).toBeGreaterThanOrEqual(0);
    // The kernel's part is within what each kind of thread used.
    for (const [name, us] of Object.entries(busy!.kernel!)) expect(us).toBeLessThanOrEqual(threads[name]!);
  });

  it('reads the time a thread spends in system calls as its kernel part', async () => {
    const logging = new PhaseLog(join(dir, 'kernel.phases.json'), [['syscalls', 'idle']]);
    const sink = openSync('/dev/null', 'w');
    const chunk = Buffer.alloc(64 * 1024);
    try {
      await logging.time('syscalls', { name: 'test', pid: process.pid }, async () => {
        // 100 ms of this thread's CPU spent in the kernel, however busy the machine (ticks are 10 ms).
        const t0 = process.threadCpuUsage();
        while (process.threadCpuUsage(t0).system < 100_000) {
          for (let i = 0; i < 200; i++) writeSync(sink, chunk);
        }
        return { ok: 1 };
      });
    } finally {
      closeSync(sink);
    }
    const [phase] = readPhases('kernel', dir)!.phases;
    const inKernel = Object.values(phase!.kernel!).reduce((a, b) => a + b, 0);
    expect(inKernel).toBeGreaterThanOrEqual(60_000);
    for (const [name, us] of Object.entries(phase!.kernel!))
      expect(us).toBeLessThanOrEqual(phase!.threads![name]!);
  });
});
