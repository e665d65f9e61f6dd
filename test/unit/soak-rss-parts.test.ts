// The soak's RSS by part (bench/soak/rss-parts.ts): which allocator holds a process's resident
// memory, read from /proc/<pid>/smaps, so an RSS verdict that fails with the heap flat names the
// part that grew (V8's code range, V8's heap pages, glibc's arenas).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rssParts, rssPartsOf } from '../../bench/soak/rss-parts.js';

/** An smaps entry: its header line and the lines the parser reads (Rss among others). */
const entry = (range: string, perms: string, name: string, rssKib: number) =>
  [
    `${range} ${perms} 00000000 00:00 0${name === '' ? ' ' : `                    ${name}`}`,
    `Size:               1024 kB`,
    `Rss:                ${rssKib} kB`,
    `Pss:                ${rssKib} kB`,
    `VmFlags: rd wr mr mw me ac`,
  ].join('\n');

describe('rssPartsOf', () => {
  it('counts each mapping in the part that holds it', () => {
    const smaps = [
      entry('2c1faebc0000-2c1faec00000', 'rw-p', '', 256), // V8 heap page, at a random hint
      entry('3edc022c0000-3edc02300000', 'rw-p', '', 128), // another
      entry('2d329000-2e48e000', 'rw-p', '[heap]', 2048), // glibc's main arena
      entry('7fc0146fb000-7fc014efb000', 'rw-p', '', 512), // a glibc arena or large allocation
      entry('7fc018000000-7fc037dc0000', 'rwxp', '', 6144), // V8's code range
      entry('7fc037dc0000-7fc037fc5000', 'r-xp', '/usr/bin/node', 4096),
      entry('7fff7658b000-7fff765ac000', 'rw-p', '[stack]', 64),
      entry('7fc0146fa000-7fc0146fb000', '---p', '', 0), // a guard page
    ].join('\n');
    expect(rssPartsOf(smaps)).toEqual({ v8: 0.375, malloc: 2.5, code: 6, file: 4, other: 0.0625 });
  });

  it('adds up to the process’s own RSS', () => {
    const vmRss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
    // The kernel's own figure read on both sides of the parts: the process allocates while it
    // reads them (a collection can also give pages back), so the sum must lie between the two,
    // give or take; a read that a burst of allocation straddled is taken again (at most 3 times).
    let parts = rssParts(process.pid);
    let off = Infinity;
    let seen = '';
    for (let attempt = 0; attempt < 3 && off > 0; attempt++) {
      const before = vmRss();
      parts = rssParts(process.pid);
      const after = vmRss();
      const total = parts.code + parts.v8 + parts.malloc + parts.file + parts.other;
      const slack = Math.max(8, Math.max(before, after) * 0.05);
      off = Math.max(0, Math.min(before, after) - slack - total, total - Math.max(before, after) - slack);
      seen += `${total.toFixed(1)} MiB between ${before.toFixed(1)} and ${after.toFixed(1)}; `;
    }
    expect(off, seen).toBe(0);
    // This process has a JIT and a heap: both parts are there.
    expect(parts.code).toBeGreaterThan(0);
    expect(parts.v8).toBeGreaterThan(parts.code);
    expect(parts.file).toBeGreaterThan(0);
  });

  it('answers NaN for a process that is gone', () => {
    expect(rssParts(2 ** 22 + 1).v8).toBeNaN();
  });
});
