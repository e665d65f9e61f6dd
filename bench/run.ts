// `npm run bench`: every scenario over one stack, one table of same-run ratios.
//   npm run bench                         every scenario (about 15 minutes on 2 cores)
//   npm run bench -- --only=create_call_vs_direct,webhook_vs_add
//                                         the scenarios producing those rows (or named: --only=campaigns)
// Knobs (environment): BENCH_ROUNDS=3 (alternations of target and baseline), BENCH_SECONDS=4
// (about how long each measured step of a round runs), BENCH_CONNECTIONS=10, BENCH_PROFILE=1
// (--cpu-prof on every web and worker process, profiles in bench/results/profiles, their top
// frames printed, and the web's cut by step where a scenario compares the route with the bare
// handler in the same process: bench/lib/phases.ts), and the scenarios' own sizes (see
// docs/performance.md).
// Uses REDIS_URL / MONGODB_URI when set, else starts a local Redis and FerretDB on PostgreSQL.
//   npm run bench -- --redis=cluster --only=scale-effects   (or BENCH_REDIS=cluster)
//                                         on a Redis Cluster: a local one of three masters (or the
//                                         cluster REDIS_URL names), every process with
//                                         REDIS_CLUSTER=true; only the scenarios in ON_CLUSTER.
// Writes bench/results/latest.json (and latest.txt). Not part of `npm test`.
import { execFileSync } from 'node:child_process';
import { readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { described, knob, loadAverage, say } from './lib/measure.js';
import { formatTable, passes, writeJson, type Row } from './lib/report.js';
import type { Scenario } from './lib/scenario.js';
import { cleanup, deadline, PROFILE_DIR, root, runtime, startStores, type RedisMode } from './lib/stack.js';
import { busiestProfile, comparePhases, summariseProfile } from './lib/profile.js';
import { readPhases } from './lib/phases.js';
import { createCall } from './scenarios/create-call.js';
import { webhooks } from './scenarios/webhooks.js';
import { webhookBodies } from './scenarios/webhook-bodies.js';
import { campaigns } from './scenarios/campaigns.js';
import { campaignCalls } from './scenarios/campaign-calls.js';
import { listCalls } from './scenarios/list-calls.js';
import { contactsImport } from './scenarios/contacts-import.js';
import { scaleEffects } from './scenarios/scale-effects.js';
import { webhooksOut } from './scenarios/webhooks-out.js';
import { intakeCost } from './scenarios/intake-cost.js';
import { storeCommands } from './scenarios/store-commands.js';

const SCENARIOS: Scenario[] = [
  createCall,
  webhooks,
  webhookBodies,
  campaigns,
  contactsImport,
  listCalls,
  campaignCalls,
  scaleEffects,
  webhooksOut,
  intakeCost,
  storeCommands,
];

/**
 * The scenarios that run on a Redis Cluster (`--redis=cluster`). The others measure against one
 * redis-server: their direct baselines and the bare server (bench/bare-http-server.ts) issue the
 * route's commands over a single-node connection with the untagged keys, and their Redis figures
 * read INFO of one server; they need a single node, and the run refuses them on a cluster.
 */
const ON_CLUSTER = new Set(['scale-effects']);

const RESULTS = join(root, 'bench', 'results');
const DEADLINE_MS = knob('BENCH_DEADLINE_S', 40 * 60, 4 * 3600) * 1000;

function selected(): Scenario[] {
  const arg = process.argv.slice(2).find((a) => a.startsWith('--only='));
  if (arg === undefined) return SCENARIOS;
  const wanted = arg
    .slice('--only='.length)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const known = new Set(SCENARIOS.flatMap((s) => [s.name, ...s.ids]));
  const unknown = wanted.filter((w) => !known.has(w));
  if (unknown.length > 0) {
    throw new Error(`--only: unknown ${unknown.join(', ')}; known: ${[...known].join(', ')}`);
  }
  return SCENARIOS.filter((s) => wanted.includes(s.name) || s.ids.some((id) => wanted.includes(id)));
}

function redisMode(): RedisMode {
  const arg = process.argv.slice(2).find((a) => a.startsWith('--redis='));
  const raw = arg === undefined ? (process.env.BENCH_REDIS ?? 'single') : arg.slice('--redis='.length);
  if (raw !== 'single' && raw !== 'cluster')
    throw new Error(`--redis / BENCH_REDIS: single or cluster (got ${raw})`);
  return raw;
}

function machine(): Record<string, string> {
  let nproc = String(cpus().length);
  try {
    nproc = execFileSync('nproc').toString().trim();
  } catch {
    // not Linux coreutils
  }
  return {
    nproc,
    cpu: cpus()[0]?.model ?? '?',
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
  };
}

async function main(): Promise<void> {
  const scenarios = selected();
  const redis = redisMode();
  if (redis === 'cluster') {
    const single = scenarios.filter((s) => !ON_CLUSTER.has(s.name)).map((s) => s.name);
    if (single.length > 0) {
      throw new Error(
        `--redis=cluster: ${single.join(', ')} need a single Redis (their baselines and Redis counts are of one server); on a cluster: --only=${[...ON_CLUSTER].join(',')}`,
      );
    }
  }
  deadline(DEADLINE_MS);
  const started = Date.now();
  const rounds = knob('BENCH_ROUNDS', 3, 15);
  const ctxBase = {
    rounds,
    seconds: knob('BENCH_SECONDS', 4, 120),
    connections: knob('BENCH_CONNECTIONS', 10, 200),
  };
  if (runtime() === 'dist') {
    // The processes run as the Procfile runs them: compiled, from this checkout's code.
    say('npm run build');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  say(`load average at start: ${loadAverage()}`);
  const stores = await startStores({ redis });
  const meta: Record<string, unknown> = {
    ...machine(),
    ...(await stores.describe()),
    processes:
      runtime() === 'dist'
        ? 'node dist/… (compiled, as the Procfile runs them)'
        : 'node --import tsx … (BENCH_RUNTIME=tsx, as npm start runs them)',
    rounds,
    seconds_per_step: ctxBase.seconds,
    connections: ctxBase.connections,
    started_at: new Date(started).toISOString(),
    redis_mode: redis,
  };
  const rows: Row[] = [];
  const loads: string[] = [];
  for (const scenario of scenarios) {
    const before = loadAverage();
    say(`── ${scenario.name} (load average ${before})`);
    const t = Date.now();
    const produced = await scenario.run({ stores, ...ctxBase });
    const after = loadAverage();
    const line = `${scenario.name}: ${((Date.now() - t) / 1000).toFixed(0)} s, load average ${before} → ${after}`;
    loads.push(line);
    say(`── ${line}`);
    rows.push(...produced);
    if (process.env.BENCH_PROFILE === '1') printProfiles(scenario.name, started);
  }
  meta.load_average = loads;
  meta.seconds = Math.round((Date.now() - started) / 1000);
  const header = [
    `npm run bench — ${new Date(started).toISOString()} — ${meta.seconds} s`,
    `machine: nproc ${String(meta.nproc)}, ${String(meta.memory)}, ${String(meta.cpu)}; Node ${String(meta.node)}`,
    `stores: ${[meta.mongodb, meta.postgresql, meta.redis].filter(Boolean).join('; ')}`,
    `web and workers: ${String(meta.processes)}; ${rounds} rounds alternating target and baseline; value, baseline and ratio are medians; range is the rounds' ratios`,
    'load average (1, 5, 15 min) at the start → end of each scenario:',
    ...loads.map((l) => `  ${l}`),
    '',
  ].join('\n');
  const table = formatTable(rows);
  const missed = rows.filter((r) => passes(r) === false).map((r) => r.id);
  const footer = missed.length === 0 ? 'every target met' : `targets missed: ${missed.join(', ')}`;
  const text = `${header}\n${table}\n${footer}\n`;
  process.stdout.write(`\n${text}`);
  mkdirSync(RESULTS, { recursive: true });
  // A cluster run is written beside the single-node one, not over it.
  const base = redis === 'cluster' ? 'latest-cluster' : 'latest';
  writeJson(join(RESULTS, `${base}.json`), rows, meta);
  writeFileSync(join(RESULTS, `${base}.txt`), text);
  say(`wrote ${join(RESULTS, `${base}.json`)}`);
}

/** A profile folder's start stamp (`<process>-<ms since epoch>-<random>`, bench/lib/stack.ts). */
const stampOf = (dir: string): number => Number(/-(\d{13})-[^-]+$/.exec(dir)?.[1] ?? 0);

/** The scenario's profiles of this run (earlier runs' folders stay in PROFILE_DIR, unprinted). */
function printProfiles(scenario: string, since: number): void {
  let dirs: string[] = [];
  try {
    dirs = readdirSync(PROFILE_DIR).filter(
      (d) => d.startsWith(`${scenario}-`) && !printed.has(d) && stampOf(d) >= since,
    );
  } catch {
    return;
  }
  const steps = readPhases(scenario);
  for (const d of dirs) {
    printed.add(d);
    const profile = busiestProfile(join(PROFILE_DIR, d));
    if (profile === undefined) continue;
    process.stderr.write(`${d}: ${summariseProfile(profile)}\n`);
    // The scenario's steps served by this process, compared pair by pair (bench/lib/phases.ts).
    const phases = steps?.phases.filter((p) => d.startsWith(`${p.process}-`)) ?? [];
    for (const [a, b] of steps?.compare ?? []) {
      if (phases.some((p) => p.label === a))
        process.stderr.write(`${d}: ${comparePhases(profile, phases, a, b)}\n`);
    }
  }
}
const printed = new Set<string>();

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err: unknown) => {
    say(`failed: ${described(err)}`);
    await cleanup();
    process.exit(1);
  });
