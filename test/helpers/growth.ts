// Linear time, told apart from quadratic without a clock budget: the cost of a run over n
// characters is compared with the cost of a run over n/10, on the same machine a moment apart,
// so a busy or slow machine stretches both sides alike. Linear code costs at most 10 times as
// much on 10 times the input (less, with its fixed overhead); quadratic code about 100 times.
//
// A cost is the smaller of the wall-clock time and the process's CPU time (process.cpuUsage):
// both can only be inflated, the wall clock by the scheduler giving the core to someone else,
// the CPU time by other threads of the process. The small side is the mean of ten runs, so both
// sides do the same work and meet the same garbage collections (fewer runs once they have cost as
// much as the large run: the ratio is then under ten anyway, as for code that caps its work). Of a
// few repetitions the smallest ratio counts (noise only ever raises one), and a step stops at its
// first ratio within the limit. Every input is a new string, so no regex cache answers a repeat.

/** Growth allowed for 10 times the input: linear is at most 10, quadratic about 100. */
export const GROWTH_LIMIT = 20;
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

function costOf(block: () => void): number {
  const cpu = cpuMs();
  const wall = performance.now();
  block();
  return Math.min(performance.now() - wall, cpuMs() - cpu);
}

async function costOfAsync(block: () => Promise<void>): Promise<number> {
  const cpu = cpuMs();
  const wall = performance.now();
  await block();
  return Math.min(performance.now() - wall, cpuMs() - cpu);
}

export interface Growth {
  /** Input length of the large side of the step that decided. */
  length: number;
  /** Cost of one run on `length` characters ÷ cost of one run on `length / 10`. */
  ratio: number;
  /** Milliseconds of one large run, and of one small run, in the best repetition. */
  largeMs: number;
  smallMs: number;
  /** Repetitions the deciding step took. */
  tries: number;
}

function summary(length: number, largeMs: number, smallMs: number, tries: number): Growth {
  return { length, largeMs, smallMs, tries, ratio: (largeMs + RESOLUTION_MS) / (smallMs + RESOLUTION_MS) };
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
    let best: Growth | undefined;
    for (let attempt = 0; attempt < TRIES && (best === undefined || best.ratio > GROWTH_LIMIT); attempt++) {
      const large = make(length, attempt);
      const small = Array.from({ length: SMALL_RUNS }, (_, i) =>
        make(length / STEP, attempt * SMALL_RUNS + i),
      );
      const largeMs = costOf(() => run(large));
      let spent = 0;
      let runs = 0;
      while (runs < SMALL_RUNS && (runs === 0 || spent < largeMs)) {
        const input = small[runs++]!;
        spent += costOf(() => run(input));
      }
      const now = summary(length, largeMs, spent / runs, attempt + 1);
      if (best === undefined || now.ratio < best.ratio) best = now;
      best.tries = attempt + 1;
    }
    last = best!;
    if (last.ratio > GROWTH_LIMIT) return last;
  }
  return last!;
}

/** `growth` for a run that answers a promise (a request): the same steps, one run at a time. */
export async function growthAsync<T>(
  lengths: number[],
  make: (length: number, variant: number) => T,
  run: (input: T) => Promise<unknown>,
): Promise<Growth> {
  let last: Growth | undefined;
  for (const length of lengths) {
    let best: Growth | undefined;
    for (let attempt = 0; attempt < TRIES && (best === undefined || best.ratio > GROWTH_LIMIT); attempt++) {
      const large = make(length, attempt);
      const small = Array.from({ length: SMALL_RUNS }, (_, i) =>
        make(length / STEP, attempt * SMALL_RUNS + i),
      );
      const largeMs = await costOfAsync(async () => {
        await run(large);
      });
      let spent = 0;
      let runs = 0;
      while (runs < SMALL_RUNS && (runs === 0 || spent < largeMs)) {
        const input = small[runs++]!;
        spent += await costOfAsync(async () => {
          await run(input);
        });
      }
      const now = summary(length, largeMs, spent / runs, attempt + 1);
      if (best === undefined || now.ratio < best.ratio) best = now;
      best.tries = attempt + 1;
    }
    last = best!;
    if (last.ratio > GROWTH_LIMIT) return last;
  }
  return last!;
}

export const describeGrowth = (g: Growth): string =>
  `${g.length.toLocaleString('en')} characters cost ${g.ratio.toFixed(1)} times ${(g.length / STEP).toLocaleString('en')} ` +
  `(${g.largeMs.toFixed(2)} ms against ${g.smallMs.toFixed(3)} ms; linear is at most 10, quadratic about 100)`;
