// When each measured step of a profiled scenario ran (BENCH_PROFILE=1), so that a process's one
// V8 profile can be cut by step: the route's samples apart from those of the bare handler served
// by the same process. The times are on the monotonic clock (process.hrtime), in microseconds,
// which is the clock V8's profiles stamp their samples with. The bench prints, for each pair a
// scenario compares, the busy time a unit (request, delivery) of each step by area and by
// function, and the difference (bench/lib/profile.ts: comparePhases).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { threadCpuMicros } from './measure.js';
import { PROFILE_DIR } from './stack.js';

export interface Phase {
  /** The step, e.g. "route" or "bare in the web". */
  label: string;
  /** The process it ran in: the start of its profile folder's name (e.g. "webhooks-web"). */
  process: string;
  start: number;
  end: number;
  /** Requests or deliveries answered in it. */
  units: number;
  /**
   * The CPU µs of each kind of the process's threads over the step (measure.ts, threadCpuMicros):
   * the profile counts the main thread only. Absent in a file written before it was kept.
   */
  threads?: Record<string, number>;
  /** Of `threads`, the µs each kind spent in the kernel (system calls). Absent in older files. */
  kernel?: Record<string, number>;
}

export interface PhaseFile {
  phases: Phase[];
  /** Pairs of labels to compare: [the step, its baseline]. */
  compare: [string, string][];
}

const nowMicros = (): number => Number(process.hrtime.bigint() / 1000n);

export const phaseFileOf = (scenario: string, dir = PROFILE_DIR): string =>
  join(dir, `${scenario}.phases.json`);

export function readPhases(scenario: string, dir = PROFILE_DIR): PhaseFile | undefined {
  const file = phaseFileOf(scenario, dir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as PhaseFile) : undefined;
}

/** A scenario's phases, written as they end (nothing is timed or written unless BENCH_PROFILE=1). */
export class PhaseLog {
  private readonly file: PhaseFile = { phases: [], compare: [] };

  constructor(
    private readonly path: string | undefined,
    compare: [string, string][],
  ) {
    this.file.compare = compare;
  }

  static of(scenario: string, compare: [string, string][]): PhaseLog {
    return new PhaseLog(process.env.BENCH_PROFILE === '1' ? phaseFileOf(scenario) : undefined, compare);
  }

  /**
   * Runs `step`, noting when it ran, how many units it answered (`ok` of its result) and the CPU
   * each kind of the process's threads used meanwhile; only runs it, when it is not `measured`
   * (a warm-up: `alternate` says which).
   */
  async time<T extends { ok: number }>(
    label: string,
    proc: { name: string; pid: number },
    step: () => Promise<T>,
    measured = true,
  ): Promise<T> {
    if (this.path === undefined || !measured) return step();
    const before = threadCpuMicros(proc.pid);
    const start = nowMicros();
    const result = await step();
    const end = nowMicros();
    const used = (now: Record<string, number>, then: Record<string, number>) =>
      Object.fromEntries(
        Object.entries(now).map(([name, us]) => [name, Math.max(0, us - (then[name] ?? 0))]),
      );
    const after = threadCpuMicros(proc.pid);
    const threads = used(after.all, before.all);
    const kernel = used(after.kernel, before.kernel);
    const phase: Phase = { label, process: proc.name, start, end, units: result.ok, threads, kernel };
    this.file.phases.push(phase);
    mkdirSync(dirname(this.path), { recursive: true });
    writeFileSync(this.path, JSON.stringify(this.file));
    return result;
  }
}
