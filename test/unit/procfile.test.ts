// The Procfile's lines as the local launchers read them (scripts/local/procfile.ts), and what the
// web's and the worker's node flag is for: Node 22's young generation on Node 24. Node 24's V8
// grows the young generation to 128 MB, and its page pool keeps the pages a heap gives back until
// a memory-reducing collection, which a busy process does not get: the processes' RSS followed
// the high-water mark of their heap and rose with each new peak (docs/soak.md#memory).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseProcfileLine, procfileLaunch, tsxArgs } from '../../scripts/local/procfile.js';

const FLAG = '--scavenger-max-new-space-capacity-mb=8';

/** The largest `new_space` (MB) a node process with `nodeArgs` commits while allocating for 1 s. */
function youngGenerationPeakMb(nodeArgs: string[]): number {
  const script = `
    const { getHeapSpaceStatistics } = require('node:v8');
    const size = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    let peak = size(), keep = [];
    const until = Date.now() + 1000;
    while (Date.now() < until) {
      const a = [];
      for (let i = 0; i < 1000; i++) a.push({ i, s: 'x' + i });
      keep.push(a);
      if (keep.length > 50) keep = keep.slice(25);
      peak = Math.max(peak, size());
    }
    process.stdout.write(String(peak / 2 ** 20));`;
  return Number(execFileSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8' }));
}

describe('the Procfile', () => {
  it("gives the web and the worker the glibc arena cap and Node 22's young generation", () => {
    expect(procfileLaunch('worker')).toEqual({
      env: { MALLOC_ARENA_MAX: '2' },
      nodeArgs: [FLAG],
      script: 'dist/workers/main.js',
    });
    expect(procfileLaunch('web')).toEqual({
      env: { MALLOC_ARENA_MAX: '2' },
      nodeArgs: [FLAG],
      script: 'dist/api/server.js',
    });
  });

  it.each(['web', 'worker'] as const)(
    'keeps a process launched with the %s flags at a 32 MB young generation under allocation',
    (type) => {
      expect(youngGenerationPeakMb(procfileLaunch(type).nodeArgs)).toBeLessThanOrEqual(32);
    },
    15_000,
  );

  it('runs a line from its TypeScript with the same node flags (npm start, the fault matrix, the tests)', () => {
    expect(tsxArgs(procfileLaunch('worker'))).toEqual([FLAG, '--import', 'tsx', 'workers/main.ts']);
    expect(tsxArgs(procfileLaunch('web'))).toEqual([FLAG, '--import', 'tsx', 'api/server.ts']);
  });

  it('refuses a line it cannot run as written rather than run part of it', () => {
    const bad = [
      ['worker: sh -c "node dist/workers/main.js"', /not node/],
      ['worker: node dist/workers/main.js --verbose', /exactly one script/],
      ['worker: node --max-semi-space-size=16;rm dist/workers/main.js', /not a --flag/],
      ['worker: node --import=x.js', /exactly one script/],
      ['worker: node dist/workers/main.ts', /not a \.js path/],
      ['worker: FOO="a b" node dist/workers/main.js', /not node/],
      ['web: node dist/api/server.js', /no "worker" process/],
    ] as const;
    for (const [line, why] of bad) expect(() => parseProcfileLine('worker', line), line).toThrow(why);
    expect(
      parseProcfileLine('worker', 'release: x\nworker:  A=1  B=  node  --x  --y=2  dist/w.js  '),
    ).toEqual({
      env: { A: '1', B: '' },
      nodeArgs: ['--x', '--y=2'],
      script: 'dist/w.js',
    });
  });
});
