import { readFileSync } from 'node:fs';

// Linear time, told apart from quadratic without a clock budget: the cost of a run over n
// characters is compared with the cost of a run over n/10, on the same machine a moment apart,
// so a busy or slow machine stretches both sides alike. Linear code costs at most 10 times as
// much on 10 times the input (less, with its fixed overhead) on a quiet machine, and was seen at
// 20 on one at load 10 to 14, whose other processes push a large input's working set out of the
// shared cache; quadratic code costs about 100 times (53 to 84 measured, overhead included).
//
// A cost is the smaller of two readings, each of which can only overstate the measuring thread's
// own CPU time: the CPU time of this process (process.cpuUsage), which the scheduler giving the
// core to someone else does not stretch, and the wall clock, which V8's threads beside this one do
// not stretch. The tests that measure growth run in a process of their own (vitest's forks, one
// test file at a time), so no other test's work is in it; but V8 marks the heap and compiles hot
// functions on threads of its own, on the other core: one large booking payload's run read 4.2 ms
// of the process's CPU over 0.3 ms of wall clock, a ratio of 56 for linear code. The wall clock
// alone is no measure on a loaded machine: at load 11 to 15 it saw a linear 10,000-to-100,000 step
// at 24.6, the large run preempted and the small one not. Not process.threadCpuUsage: Linux gives
// it in 4 ms ticks. Each repetition of `growth` and `growthOfScale` first runs a small input
// unmeasured, so the large run does not pay for compiling what it runs (the first generated
// transcript, the empty one, measured 25 times itself). `growthAsync` does not: its runs are
// requests and jobs that store what they do, so a caller warms up itself (the hostile transcript's
// test sends a first delivery). The small side is the mean of ten runs, so both
// sides do the same work and meet the same garbage collections (fewer runs once they have cost as
// much as the large run: the ratio is then under ten anyway, as for code that caps its work). Of a
// few repetitions the smallest ratio counts (noise only ever raises one), and a step stops at its
// first ratio within the limit. Every input is a new string, so no regex cache answers a repeat.

/** Growth allowed for 10 times the input: linear is at most 10 (20 under heavy load), quadratic about 100. */
export const GROWTH_LIMIT = 30;
/** Added to both sides: jitter on a function that takes microseconds cannot make a ratio. */
const RESOLUTION_MS = 0.05;
/** Each step is ten times the characters. */
const STEP = 10;
/** Runs of the small input per repetition, at most. */
const SMALL_RUNS = 10;
const TRIES = 5;

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const cost = (cpu: number, wall: number): number => Math.min(performance.now() - wall, cpuMs() - cpu);

/** Milliseconds `block` took of this thread: the smaller of the process's CPU time and the wall clock. */
export function costOf(block: () => void): number {
  const cpu = cpuMs();
  const wall = performance.now();
  block();
  return cost(cpu, wall);
}

async function costOfAsync(block: () => Promise<void>): Promise<number> {
  const cpu = cpuMs();
  const wall = performance.now();
  await block();
  return cost(cpu, wall);
}

export interface Growth {
  /** Characters of the large input and of the small one (a tenth, or about) of the deciding step. */
  largeSize: number;
  smallSize: number;
  /** Cost of one run on the large input ÷ cost of one run on the small one. */
  ratio: number;
  /** Milliseconds of one large run, and of one small run, in the best repetition. */
  largeMs: number;
  smallMs: number;
  /** Repetitions the deciding step took. */
  tries: number;
}

type Sizes = Pick<Growth, 'largeSize' | 'smallSize'>;

const ratioOf = (largeMs: number, smallMs: number): number =>
  (largeMs + RESOLUTION_MS) / (smallMs + RESOLUTION_MS);

/** One step: `make(true, variant)` builds a new large input, `make(false, variant)` a small one. */
function step<T>(
  sizes: Sizes,
  make: (large: boolean, variant: number) => T,
  run: (input: T) => unknown,
): Growth {
  let best: Growth | undefined;
  for (let attempt = 0; attempt < TRIES && (best === undefined || best.ratio > GROWTH_LIMIT); attempt++) {
    const large = make(true, attempt);
    const small = Array.from({ length: SMALL_RUNS }, (_, i) => make(false, attempt * SMALL_RUNS + i));
    run(make(false, -2 - attempt));
    const largeMs = costOf(() => run(large));
    let spent = 0;
    let runs = 0;
    while (runs < SMALL_RUNS && (runs === 0 || spent < largeMs)) {
      const input = small[runs++]!;
      spent += costOf(() => run(input));
    }
    const smallMs = spent / runs;
    const now = { ...sizes, largeMs, smallMs, ratio: ratioOf(largeMs, smallMs), tries: attempt + 1 };
    best = best === undefined || now.ratio < best.ratio ? now : { ...best, tries: attempt + 1 };
  }
  return best!;
}

/** How `growthAsync` measures: by default as `growth` does; `meter` reads another process's CPU. */
export interface AsyncGrowthOptions {
  /** Milliseconds of CPU so far of what is measured (e.g. a worker process's main thread). */
  meter?: () => number;
  /** Repetitions at most (default 5). */
  tries?: number;
}

async function stepAsync<T>(
  sizes: Sizes,
  make: (large: boolean, variant: number) => T,
  run: (input: T) => Promise<unknown>,
  options: AsyncGrowthOptions,
): Promise<Growth> {
  const { meter } = options;
  const cost = async (input: T): Promise<number> => {
    if (meter === undefined)
      return costOfAsync(async () => {
        await run(input);
      });
    const before = meter();
    await run(input);
    return meter() - before;
  };
  let best: Growth | undefined;
  const tries = options.tries ?? TRIES;
  for (let attempt = 0; attempt < tries && (best === undefined || best.ratio > GROWTH_LIMIT); attempt++) {
    const large = make(true, attempt);
    const small = Array.from({ length: SMALL_RUNS }, (_, i) => make(false, attempt * SMALL_RUNS + i));
    const largeMs = await cost(large);
    let spent = 0;
    let runs = 0;
    while (runs < SMALL_RUNS && (runs === 0 || spent < largeMs)) spent += await cost(small[runs++]!);
    const smallMs = spent / runs;
    const now = { ...sizes, largeMs, smallMs, ratio: ratioOf(largeMs, smallMs), tries: attempt + 1 };
    best = best === undefined || now.ratio < best.ratio ? now : { ...best, tries: attempt + 1 };
  }
  return best!;
}

/**
 * The growth of `run` from `lengths[i] / 10` to `lengths[i]` characters, smallest length first;
 * the first step over GROWTH_LIMIT (in every repetition) is returned, else the largest step.
 * `make(length, variant)` builds a new input of about `length` characters each time it is called.
 */
export function growth<T>(
  lengths: number[],
  make: (length: number, variant: number) => T,
  run: (input: T) => unknown,
): Growth {
  let last: Growth | undefined;
  for (const length of lengths) {
    const small = length / STEP;
    last = step({ largeSize: length, smallSize: small }, (l, v) => make(l ? length : small, v), run);
    if (last.ratio > GROWTH_LIMIT) break;
  }
  return last!;
}

/**
 * `growth` for a run that answers a promise (a request, a job): the same steps, one run at a time,
 * its cost measured in this process unless `options.meter` says where.
 */
export async function growthAsync<T>(
  lengths: number[],
  make: (length: number, variant: number) => T,
  run: (input: T) => Promise<unknown>,
  options: AsyncGrowthOptions = {},
): Promise<Growth> {
  let last: Growth | undefined;
  for (const length of lengths) {
    const small = length / STEP;
    last = await stepAsync(
      { largeSize: length, smallSize: small },
      (l, v) => make(l ? length : small, v),
      run,
      options,
    );
    if (last.ratio > GROWTH_LIMIT) break;
  }
  return last!;
}

/**
 * One step for a structured input (a generated webhook, a CSV row): `make(scale)` builds it with
 * each of its texts `scale` times as long, 1 then 10; `size` says how many characters it holds.
 */
export function growthOfScale<T>(
  make: (scale: number, variant: number) => T,
  size: (input: T) => number,
  run: (input: T) => unknown,
): Growth {
  const decade = (from: number): Growth => {
    const sizes = { largeSize: size(make(from * STEP, -1)), smallSize: size(make(from, -1)) };
    return step(sizes, (large, variant) => make(large ? from * STEP : from, variant), run);
  };
  const first = decade(1);
  if (first.ratio <= GROWTH_LIMIT) return first;
  // Work that a bound caps grows faster than its input until the bound is reached, and no faster
  // after: findPhone tries at most MAX_PHONE_CANDIDATES candidates, and a transcript of "/1/1/1…"
  // went from a few tries to all of them between 144 and 1,251 characters (27 times the cost on a
  // quiet machine, over 30 on a loaded one) and cost no more at 123,000. Quadratic code grows a
  // hundredfold in the next decade too: that decade decides.
  const next = decade(STEP);
  return next.ratio <= GROWTH_LIMIT ? next : first;
}

export const describeGrowth = (g: Growth): string =>
  `${g.largeSize.toLocaleString('en')} characters cost ${g.ratio.toFixed(1)} times ${g.smallSize.toLocaleString('en')} ` +
  `(${g.largeMs.toFixed(2)} ms against ${g.smallMs.toFixed(3)} ms; linear is at most 10, quadratic about 100; the limit is ${GROWTH_LIMIT})`;

/**
 * Milliseconds the main thread of process `pid` has been on a CPU (Linux: /proc/<pid>/schedstat,
 * else /proc/<pid>/stat's user and system ticks, which count every thread): a worker process's
 * JavaScript, whatever else the machine runs.
 */
export function processCpuMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, fields 14 and 15 of stat (12 and 13 after "(comm) "), in ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  }
}
