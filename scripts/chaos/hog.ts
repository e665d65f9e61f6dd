// `npm run chaos -- --hog N`: N processes that only spin, for the whole run, so the fault matrix
// runs on a loaded machine (the SIGTERM finding of issue 29 showed only at load 5–7), and the
// machine's 1-minute load average sampled every 10 s, reported with the run's result.
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';

export interface Hog {
  /** Stops the spinners; the load samples taken (1-minute load average, every 10 s). */
  stop(): number[];
}

export function startHog(processes: number): Hog {
  const spinners: ChildProcess[] = [];
  for (let i = 0; i < processes; i++) {
    spinners.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  }
  // However the run ends (an exit, Ctrl-C), the spinners end with it.
  const killAll = () => {
    for (const spinner of spinners) spinner.kill('SIGKILL');
  };
  process.once('exit', killAll);
  const samples: number[] = [];
  const timer = setInterval(() => samples.push(loadavg()[0]!), 10_000);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      killAll();
      return samples;
    },
  };
}

/** "load 6.1–9.3 (mean 7.4; 48 samples, the first 6 left out: the average still rising)". */
export function describeLoad(samples: number[]): string {
  const settled = samples.slice(6);
  if (settled.length === 0) return 'load: too short a run to sample';
  const min = Math.min(...settled);
  const max = Math.max(...settled);
  const mean = settled.reduce((a, b) => a + b, 0) / settled.length;
  return (
    `1-minute load average ${min.toFixed(1)}–${max.toFixed(1)} (mean ${mean.toFixed(1)}; ` +
    `${settled.length} samples every 10 s, the first minute left out)`
  );
}
