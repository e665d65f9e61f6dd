#!/usr/bin/env node
// A bounded CPU hog, to run the test suite on a machine as loaded as the shared CI one (load
// average 8 to 13 on 2 cores): busy worker threads, each spinning on one core's worth of work.
// Plain Node, no dependencies. See docs/ci.md#running-the-suite-under-load.
//
//   npm run load:hog                       7 spinners for 45 minutes
//   npm run load:hog -- --spinners 9 --minutes 20
//
// It stops by itself: after --minutes (45 by default, at most 120), on SIGINT, SIGTERM or
// SIGHUP, or within a second of its parent process going away (a closed terminal, a killed
// `npm run`). The spinners are threads of this one process, so nothing outlives it, even a
// SIGKILL. Every 30 s it prints the load average (1, 5 and 15 minutes).
import { loadavg } from 'node:os';
import { clearInterval, clearTimeout, setInterval, setTimeout } from 'node:timers';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const DEFAULT_SPINNERS = 7; // with the suite's own processes, holds the 1-minute average over 6 on 2 cores
const MAX_SPINNERS = 64;
const DEFAULT_MINUTES = 45;
const MAX_MINUTES = 120;
const REPORT_EVERY_MS = 30_000;

if (!isMainThread) spin(workerData.deadline);
else main();

/** One spinner: arithmetic until the deadline (or until the main thread terminates it). */
function spin(deadline) {
  let x = 0;
  while (Date.now() < deadline) {
    for (let i = 1; i < 1_000_000; i++) x += Math.sqrt(i) % 7;
  }
  parentPort?.postMessage(x);
}

function usage(problem) {
  process.stderr.write(
    `cpu-hog: ${problem}\n` +
      `usage: node scripts/load/cpu-hog.mjs [--spinners N (1-${MAX_SPINNERS}, default ${DEFAULT_SPINNERS})] ` +
      `[--minutes M (over 0, at most ${MAX_MINUTES}, default ${DEFAULT_MINUTES})]\n`,
  );
  process.exit(2);
}

function options(argv) {
  const chosen = { spinners: DEFAULT_SPINNERS, minutes: DEFAULT_MINUTES };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const name = flag.replace(/^--/, '');
    if (!(name in chosen)) usage(`unknown option ${argv[i]}`);
    const raw = inline ?? argv[++i];
    const value = Number(raw);
    if (raw === undefined || raw === '' || !Number.isFinite(value)) usage(`--${name} needs a number`);
    chosen[name] = value;
  }
  if (!Number.isInteger(chosen.spinners) || chosen.spinners < 1 || chosen.spinners > MAX_SPINNERS)
    usage(`--spinners must be a whole number from 1 to ${MAX_SPINNERS}`);
  if (!(chosen.minutes > 0 && chosen.minutes <= MAX_MINUTES))
    usage(`--minutes must be more than 0 and at most ${MAX_MINUTES}`);
  return chosen;
}

function main() {
  const { spinners, minutes } = options(process.argv.slice(2));
  const started = Date.now();
  const deadline = started + minutes * 60_000;
  const parent = process.ppid;
  const say = (text) => {
    const at = new Date().toISOString().slice(11, 19);
    process.stdout.write(`[cpu-hog ${at}] ${text}\n`);
  };
  const load = () =>
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`;

  const threads = Array.from({ length: spinners }, () => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { deadline } });
    worker.on('error', (err) => say(`a spinner failed: ${err.message}`));
    return worker;
  });

  let stopping = false;
  const stop = async (why) => {
    if (stopping) return;
    stopping = true;
    clearInterval(report);
    clearInterval(watch);
    clearTimeout(timer);
    await Promise.allSettled(threads.map((t) => t.terminate()));
    say(`stopped (${why}) after ${((Date.now() - started) / 60_000).toFixed(1)} min; ${load()}`);
    process.exit(0);
  };

  say(
    `pid ${process.pid}: ${spinners} spinners for ${minutes} min (until ${new Date(deadline).toISOString().slice(11, 19)} UTC); ` +
      `stop with: kill ${process.pid}; ${load()}`,
  );
  const report = setInterval(() => {
    const left = Math.max(0, (deadline - Date.now()) / 60_000);
    say(`${load()} (${spinners} spinners, ${left.toFixed(1)} min left)`);
  }, REPORT_EVERY_MS);
  // The parent gone, this process is re-parented (to init or a subreaper): stop with it.
  const watch = setInterval(() => {
    if (process.ppid !== parent) void stop(`parent process ${parent} ended`);
  }, 1000);
  const timer = setTimeout(() => void stop(`${minutes} min are up`), deadline - Date.now());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void stop(signal));
}
