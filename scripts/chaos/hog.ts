// `npm run chaos -- --hog N`: the CPU hog (scripts/load/cpu-hog.mjs, N spinners) for the whole
// run, so the fault matrix runs on a loaded machine (a SIGTERM finding showed only at load 5–7),
// and the machine's 1-minute load average sampled every 10 s, reported with the run's result.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';

const cpuHog = join(dirname(fileURLToPath(import.meta.url)), '..', 'load', 'cpu-hog.mjs');

export interface Hog {
  /** Stops the spinners; the load samples taken (1-minute load average, every 10 s). */
  stop(): number[];
}

export function startHog(spinners: number): Hog {
  // The hog ends by itself within a second of this process going away, however it ends.
  const hog = spawn(process.execPath, [cpuHog, '--spinners', String(spinners), '--minutes', '120'], {
    stdio: 'ignore',
  });
  const killAll = () => {
    hog.kill('SIGTERM');
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

/** "1-minute load average 6.1–9.3 (mean 7.4; 48 samples, the first 6 left out: the average still rising)". */
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
