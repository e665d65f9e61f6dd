// Measuring helpers shared by the bench scenarios: steady-state rates over a fixed amount of
// work (autocannon or a concurrent loop), timed from the first request sent to the last answer
// received (never rounded to autocannon's one-second tick), medians and ranges, RSS and load.
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';

export const say = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

/** An error for a failed run's last line, with its causes (fetch's "fetch failed" says why only in its cause). */
export function described(err: unknown, depth = 0): string {
  if (!(err instanceof Error)) return String(err);
  const own = err.stack ?? err.message;
  return err.cause === undefined || depth >= 3
    ? own
    : `${own}\n  caused by: ${described(err.cause, depth + 1)}`;
}

/** Set on a signal or the deadline (bench/lib/stack.ts): loops give up at their next step. */
export const interruption = { interrupted: false };
export function checkInterrupted(): void {
  if (interruption.interrupted) throw new Error('interrupted');
}

/** A positive integer from the environment, else `fallback`; capped at `max`. */
export function knob(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer (got ${raw})`);
  return Math.min(n, max);
}

export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export const range = (xs: number[]): [number, number] => {
  const s = xs.filter((x) => Number.isFinite(x));
  return s.length === 0 ? [NaN, NaN] : [Math.min(...s), Math.max(...s)];
};

export function percentile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** The 1-, 5- and 15-minute load averages, as `uptime` prints them. */
export const loadAverage = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

/** Resident set size of a process in MiB (Linux /proc); NaN once it has exited. */
export function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/** Samples a process's RSS every `everyMs` while started; `peak` is the highest seen. */
export class RssSampler {
  peak = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly pid: number,
    private readonly everyMs = 25,
  ) {}
  start(): this {
    this.peak = Math.max(this.peak, rssMiB(this.pid) || 0);
    this.timer = setInterval(() => {
      const now = rssMiB(this.pid);
      if (Number.isFinite(now)) this.peak = Math.max(this.peak, now);
    }, this.everyMs);
    return this;
  }
  stop(): number {
    clearInterval(this.timer);
    return this.peak;
  }
}

/** One measured run: operations completed per second over the run, and their latency. */
export interface Rate {
  rate: number;
  ok: number;
  failed: number;
  seconds: number;
  p50: number;
  p95: number;
  p99: number;
}

/**
 * autocannon for exactly `amount` requests; the rate is 2xx answers over the time from the
 * call to the last answer (autocannon's own `duration` waits for its next sampling tick).
 */
export async function cannon(options: autocannon.Options, amount: number): Promise<Rate> {
  let last = 0;
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ timeout: 10, ...options, amount, sampleInt: 100 }, (err, res) =>
      err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(res),
    );
    instance.on('response', () => {
      last = performance.now();
    });
  });
  const seconds = ((last || performance.now()) - started) / 1000;
  const ok = result['2xx'];
  return {
    rate: ok / seconds,
    ok,
    failed: result.non2xx + result.errors + result.timeouts,
    seconds,
    p50: result.latency.p50,
    p95: result.latency.p97_5,
    p99: result.latency.p99,
  };
}

/** `op(i)` for i in [0, amount), `concurrency` at a time: the same shape of load as autocannon's. */
export async function loop(
  concurrency: number,
  amount: number,
  op: (i: number) => Promise<unknown>,
): Promise<Rate> {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  let firstError: unknown;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, amount) }, async () => {
      while (next < amount) {
        checkInterrupted();
        const i = next++;
        const t = performance.now();
        try {
          await op(i);
          latencies.push(performance.now() - t);
        } catch (err) {
          failed++;
          firstError ??= err;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (failed > 0) say(`${failed} of ${amount} operations failed; first: ${String(firstError)}`);
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / seconds,
    ok: latencies.length,
    failed,
    seconds,
    p50: percentile(latencies, 0.5),
    p95: percentile(latencies, 0.95),
    p99: percentile(latencies, 0.99),
  };
}

/** How many operations at `rate` per second fill about `seconds` (at least `min`). */
export const amountFor = (rate: number, seconds: number, min = 200): number =>
  Math.max(min, Math.round((Number.isFinite(rate) ? rate : 0) * seconds));

/**
 * Alternates the measured steps `rounds` times, after one warm-up of each that also sizes the
 * round: each step returns a rate and is asked for about `seconds` worth of work. Returns every
 * round's rate per step. A step is told whether its run is measured: the probe and the warm-up
 * are not, and a step that notes its CPU or its profile phase notes only measured runs. (The call
 * webhook's probe of 100 deliveries cost the web 800 to 2,300 µs of CPU each, compiling, and its
 * warm-up 400 to 800, against 270 to 520 in the rounds: counted, they lifted a three-round median
 * by 5 to 11 %.)
 *
 * The rounds run the steps in the given order, then in the reverse order, and so on: a machine
 * whose speed drifts over the run (its load, V8 still settling; one five-round run of the call
 * webhook saw its CPU a delivery fall from 468 to 316 µs) favours no step's place in a round. In
 * one order only, the call webhook's route, first in every round, read 1.20 times its duties' CPU
 * (last); with that order reversed, 1.07.
 */
export async function alternate<K extends string>(
  rounds: number,
  seconds: number,
  steps: Record<K, (amount: number, measured: boolean) => Promise<Rate>>,
  options: {
    warmupSeconds?: number;
    between?: () => Promise<void>;
    log?: (round: number, r: Record<K, Rate>) => void;
  } = {},
): Promise<Record<K, Rate[]>> {
  const names = Object.keys(steps) as K[];
  const sized = {} as Record<K, number>;
  const warmupSeconds = options.warmupSeconds ?? 2;
  for (const name of names) {
    // A short probe (fixed count), then a warm-up of `warmupSeconds` sized from it.
    const probe = await steps[name](100, false);
    const warm = await steps[name](amountFor(probe.rate, warmupSeconds, 100), false);
    sized[name] = amountFor(warm.rate, seconds);
    await options.between?.();
  }
  const out = Object.fromEntries(names.map((n) => [n, [] as Rate[]])) as Record<K, Rate[]>;
  for (let round = 1; round <= rounds; round++) {
    const got = {} as Record<K, Rate>;
    for (const name of round % 2 === 1 ? names : [...names].reverse()) {
      got[name] = await steps[name](sized[name], true);
      out[name].push(got[name]);
      await options.between?.();
    }
    options.log?.(round, got);
  }
  return out;
}

/** Busy and total CPU time of the whole machine so far (Linux /proc/stat), in clock ticks. */
export function machineTicks(): { busy: number; total: number } {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
    const total = cpu.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/**
 * The clock ticks (1/100 s) of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line: user +
 * system, or the system (kernel) ticks alone.
 */
const cpuTicksOf = (stat: string, part: 'all' | 'kernel' = 'all'): number => {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (part === 'kernel' ? 0 : Number(fields[11])) + Number(fields[12]);
};

/** CPU seconds a process has used so far (user + system; Linux /proc/<pid>/stat); NaN once gone. */
export function processCpuSeconds(pid: number): number {
  try {
    return cpuTicksOf(readFileSync(`/proc/${pid}/stat`, 'utf8')) / 100;
  } catch {
    return NaN;
  }
}

/**
 * CPU microseconds each kind of thread of a process has used so far, by its name with any
 * trailing number dropped (`MainThread`, `V8Worker`, `libuv-worker`: Linux
 * /proc/<pid>/task/<tid>/comm and stat): `all` of it, and of that the time they spent in the
 * `kernel` (system calls: socket writes, wake-ups), from one read of each thread. Both empty once
 * the process is gone. A thread that ended takes its time with it, so compare two readings of
 * long-lived threads only.
 */
export function threadCpuMicros(pid: number): {
  all: Record<string, number>;
  kernel: Record<string, number>;
} {
  const all: Record<string, number> = {};
  const kernel: Record<string, number> = {};
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return { all, kernel };
  }
  for (const task of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim().replace(/\d+$/, '');
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      all[name] = (all[name] ?? 0) + cpuTicksOf(stat) * 10_000;
      kernel[name] = (kernel[name] ?? 0) + cpuTicksOf(stat, 'kernel') * 10_000;
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return { all, kernel };
}

/** The stores' servers, counted as the stack's besides the processes a scenario names. */
const STORE_PROCESS = /^(redis-server|ferretdb|postgres)/;

/**
 * How a process under the bench is counted: one of `named` (the web, the workers) under its name,
 * a store's server (Redis, FerretDB, PostgreSQL with its backends together) under its command's,
 * both the stack's; any other (tsx's esbuild, a process a scenario left running) by its command's
 * name, not the stack's. A Node process is `MainThread` by name since Node 24 (it was `node`), so
 * no name tells which Node process is the bench's own: only being named does.
 */
function groupOf(
  named: ReadonlyMap<number, string>,
  pid: number,
  name: string,
): { group: string; stack: boolean } {
  const own = named.get(pid);
  if (own !== undefined) return { group: own, stack: true };
  if (!STORE_PROCESS.test(name)) return { group: name, stack: false };
  return { group: name.startsWith('postgres') ? 'postgres' : name, stack: true };
}

/** CPU seconds so far of the processes under this one, by group: the stack's, and the others. */
export interface CpuByGroup {
  stack: Map<string, number>;
  others: Map<string, number>;
}

export function cpuByGroup(named: ReadonlyMap<number, string>, root = process.pid): CpuByGroup {
  const out: CpuByGroup = { stack: new Map(), others: new Map() };
  const all = descendants(root);
  for (const [pid, name] of named) all.set(pid, name);
  for (const [pid, name] of all) {
    const used = processCpuSeconds(pid);
    if (!Number.isFinite(used)) continue;
    const { group, stack } = groupOf(named, pid, name);
    const into = stack ? out.stack : out.others;
    into.set(group, (into.get(group) ?? 0) + used);
  }
  return out;
}

/** This process's descendants (Linux /proc): pid → command name. */
export function descendants(root = process.pid): Map<number, string> {
  const parent = new Map<number, number>();
  const comm = new Map<number, string>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return new Map();
  }
  for (const d of entries) {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(d), ppid);
      comm.set(Number(d), name);
    } catch {
      // gone meanwhile
    }
  }
  const out = new Map<number, string>();
  for (const [pid, name] of comm) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.set(pid, name);
        break;
      }
    }
  }
  return out;
}

/**
 * CPU seconds used so far by this process and its descendants (the stores a bench started:
 * Redis, FerretDB, PostgreSQL and its backends), by group; children that have exited are not
 * counted, so read it around work whose processes stay up.
 */
export function stackCpuSeconds(): Record<string, number> {
  const { stack, others } = cpuByGroup(new Map());
  const out: Record<string, number> = Object.fromEntries([...others, ...stack]);
  const own = process.cpuUsage();
  out.bench = (own.user + own.system) / 1e6;
  return out;
}

/**
 * Cores used over a stretch of time by the stack's processes, grouped: the named processes
 * (web, workers), and the other descendants of this process by command (ferretdb, postgres,
 * redis-server), the bench process itself, and the machine as a whole (other users included).
 */
export class StackCpu {
  private readonly started = performance.now();
  private readonly machine = machineTicks();
  private readonly before = new Map<number, number>();
  private readonly self = process.cpuUsage();
  constructor(private readonly named: Map<number, string>) {
    for (const pid of [...descendants().keys(), ...named.keys()])
      this.before.set(pid, processCpuSeconds(pid));
  }
  read(): string {
    const seconds = (performance.now() - this.started) / 1000;
    const groups = new Map<string, number>();
    const all = descendants();
    for (const [pid, name] of this.named) all.set(pid, name);
    for (const [pid, name] of all) {
      const { group: label, stack } = groupOf(this.named, pid, name);
      const group = stack ? label : `other ${label}`;
      const used = processCpuSeconds(pid) - (this.before.get(pid) ?? 0);
      if (Number.isFinite(used)) groups.set(group, (groups.get(group) ?? 0) + used / seconds);
    }
    const own = process.cpuUsage(this.self);
    groups.set('bench', (own.user + own.system) / 1e6 / seconds);
    const now = machineTicks();
    const busy = (now.busy - this.machine.busy) / (now.total - this.machine.total);
    const parts = [...groups.entries()]
      .filter(([, v]) => v >= 0.01)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v.toFixed(2)}`);
    return `cores used: ${parts.join(', ')}; machine ${(100 * busy).toFixed(0)}% busy (all users)`;
  }
}
