// npm run chaos [-- --seed N] [--scale X] [--redis=cluster] [--hog N]
// The fault matrix against real processes (docs/resilience.md). CHAOS_SEED and
// CHAOS_SCALE set the same as the flags; --redis=cluster is the Redis Cluster run instead
// (clusterConfig in run.ts: every area's happy path and one worker SIGKILL, at a fixed size);
// --hog N runs the CPU hog with N spinners alongside (./hog.ts) and reports the load; the process's logs and report.json go to
// .local/chaos/seed-<N>-<time>/. Exit code 0 when every invariant holds, 1 when one does not,
// 2 on bad flags or a run that could not start.
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { liveClusters } from './cluster.js';
import { describeLoad, startHog, type Hog } from './hog.js';
import { clusterConfig, defaultConfig, formatTable, runChaos } from './run.js';

export const DEFAULT_SEED = 1337;

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const say = (line: string) =>
  void process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run chaos -- [--seed N] [--scale X] [--redis=single|cluster] [--hog N]   (or CHAOS_SEED, CHAOS_SCALE)\n`,
  );
  process.exit(2);
}

function parse(argv: string[]): { seed: number; scale: number; redis: 'single' | 'cluster'; hog: number } {
  let redis: 'single' | 'cluster' = 'single';
  let hog = 0;
  let seed = process.env.CHAOS_SEED === undefined ? DEFAULT_SEED : Number(process.env.CHAOS_SEED);
  let scale = process.env.CHAOS_SCALE === undefined ? 1 : Number(process.env.CHAOS_SCALE);
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split('=', 2);
    const value = inline ?? argv[++i];
    if (flag === '--seed') seed = Number(value);
    else if (flag === '--scale') scale = Number(value);
    else if (flag === '--redis' && (value === 'single' || value === 'cluster')) redis = value;
    else if (flag === '--hog') hog = Number(value);
    else usage(`unknown argument ${argv[i]}`);
  }
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    usage('the seed must be an integer 0 … 4294967295');
  if (!Number.isFinite(scale) || scale <= 0 || scale > 10) usage('the scale must be a number in (0, 10]');
  if (!Number.isInteger(hog) || hog < 0 || hog > 64) usage('--hog takes a number of processes, 0 … 64');
  return { seed, scale, redis, hog };
}

async function main(): Promise<void> {
  const { seed, scale, redis, hog } = parse(process.argv.slice(2));
  const runDir = join(
    root,
    '.local',
    'chaos',
    `seed-${seed}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  );
  await mkdir(runDir, { recursive: true });
  const config =
    redis === 'cluster' ? clusterConfig(seed, runDir, say) : defaultConfig(seed, scale, runDir, say);
  let result;
  const spinning: Hog | undefined = hog > 0 ? startHog(hog) : undefined;
  if (spinning !== undefined) say(`the CPU hog, ${hog} spinners, holds the machine busy for the run`);
  let load = '';
  try {
    result = await runChaos(config);
  } catch (err) {
    say(`the run could not finish: ${(err as Error).stack ?? String(err)}`);
    process.exit(2);
  } finally {
    if (spinning !== undefined) load = describeLoad(spinning.stop());
  }
  process.stdout.write(
    `\nChaos run, seed ${seed}, ${redis === 'cluster' ? 'on a Redis Cluster' : `scale ${scale}`} (${(result.durationMs / 60_000).toFixed(1)} min)\n\n`,
  );
  process.stdout.write(`${formatTable(result.rows)}\n\n`);
  if (load !== '') process.stdout.write(`With the CPU hog (${hog} spinners): ${load}.\n`);
  const failed = result.rows.filter((r) => !r.ok).length;
  process.stdout.write(
    failed === 0
      ? 'All invariants hold.\n'
      : `${failed} invariant(s) failed. Logs and report.json: ${runDir}\n`,
  );
  process.exit(failed === 0 ? 0 : 1);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping the processes of the run ...`);
    void Promise.allSettled([...liveClusters].map((c) => c.stop())).finally(() => process.exit(130));
  });
}

void main();
