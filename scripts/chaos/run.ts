// One chaos run: start the processes, send the workload while the faults are injected, wait
// until the service has finished what it acknowledged, check the invariants. Used by
// `npm run chaos` (scripts/chaos/main.ts) and by the bounded subset in `npm test`.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Cluster } from './cluster.js';
import { Faults, usedMemory, type FaultPlan } from './faults.js';
import { checkInvariants, settle, type Row } from './invariants.js';
import { Ledger } from './ledger.js';
import { seededRng } from './rng.js';
import { Workload, createFirms, type WorkloadSizes, type WorkloadTiming } from './workload.js';

export interface ChaosConfig {
  seed: number;
  sizes: WorkloadSizes;
  timing: WorkloadTiming;
  plan: FaultPlan;
  /** How long to wait, after the workload and the faults, for the service to finish. */
  settleMs: number;
  /** How much more Redis may hold at the end than at the start. */
  redisGrowthBudget: number;
  /**
   * Redis' maxmemory as room above what it holds once the firms are made (none when unset): small
   * enough that the availability flood would fill it without the cache's bounds.
   */
  redisHeadroom?: number;
  runDir: string;
  /** A MongoDB to use instead of a local FerretDB (no MongoDB outage then). */
  mongodbUri?: string;
  /** Extra environment of the web and worker processes. */
  env?: Record<string, string>;
  /** Whether each firm subscribes a webhook endpoint to every event (default true). */
  eventsOut?: boolean;
  /** One redis-server (default), or a local Redis Cluster of three masters (REDIS_CLUSTER=true). */
  redis?: 'single' | 'cluster';
  say: (line: string) => void;
}

export interface ChaosResult {
  rows: Row[];
  ok: boolean;
  durationMs: number;
  ledger: Ledger;
}

/** Scaled sizes and timings of `npm run chaos` (CHAOS_SCALE=1: the workload). */
export function defaultConfig(
  seed: number,
  scale: number,
  runDir: string,
  say: (l: string) => void,
): ChaosConfig {
  const n = (base: number, min: number) => Math.max(min, Math.round(base * scale));
  const spreadMs = Math.max(30_000, Math.round(180_000 * Math.min(scale, 1)));
  return {
    seed,
    sizes: {
      campaignLeads: n(2000, 10),
      directCalls: n(200, 5),
      importRows: n(5000, 20),
      bookingEvents: n(500, 6),
      availabilityRequests: n(80, 10),
    },
    timing: {
      spreadMs,
      soonStartMs: [150_000, 300_000],
      reminderOffsets: [1440, 60, 1],
      reminderGraceMs: 60_000,
      nextEventMs: [5_000, 30_000],
      copyDelayMaxMs: 30_000,
      launchAtMs: [3_000, 10_000],
      importAtMs: [10_000, Math.round(spreadMs / 2)],
    },
    plan: {
      workerKills: 10,
      sigterm: true,
      redisOutage: true,
      mongoOutage: true,
      slackFailures: true,
      clio429: true,
      outageMs: 10_000,
      firstAtMs: 10_000,
      gapMs: [5_000, 15_000],
      slackWindowMs: 60_000,
      clio429Rate: 0.1,
      faultHitWaitMs: 120_000,
      busyWaitMs: 60_000,
    },
    settleMs: 40 * 60_000,
    redisGrowthBudget: 64 * 1048576,
    // The flood (80 answers of about 1 MiB, each kept 30 s) added about 50 MB before its bounds.
    redisHeadroom: Number(process.env.CHAOS_REDIS_HEADROOM_MB ?? 48) * 1048576,
    runDir,
    say,
  };
}

/** The timings of a run that ends in a few minutes (the cluster run, the chaos subset in npm test). */
export const SHORT_RUN_TIMING: WorkloadTiming = {
  spreadMs: 10_000,
  // A "soon" booking's reminder (offset 0: at its start) is due 25–40 s after it was made.
  soonStartMs: [25_000, 40_000],
  reminderOffsets: [1440, 0],
  // The settle's margin: longer, and the last reminders due would be judged as "on their way"
  // whatever their state, so a run that sent none would pass.
  reminderGraceMs: 15_000,
  nextEventMs: [1_000, 3_000],
  copyDelayMaxMs: 5_000,
  launchAtMs: [1_000, 2_000],
  importAtMs: [2_000, 5_000],
};

/**
 * `npm run chaos -- --redis=cluster`: the service on a local Redis Cluster of three masters
 * (docs/redis.md#redis-cluster), the happy path of every area at a size that ends in a few
 * minutes (a 200-lead campaign, direct calls, an import, booking stories, every call_analyzed
 * effect against the fakes) and one worker SIGKILLed mid-campaign. No Redis or MongoDB outage:
 * a cluster is not one server to stop and start (failover is the Sentinel run's).
 */
export function clusterConfig(seed: number, runDir: string, say: (l: string) => void): ChaosConfig {
  const base = defaultConfig(seed, 1, runDir, say);
  return {
    ...base,
    redis: 'cluster',
    sizes: { campaignLeads: 200, directCalls: 10, importRows: 200, bookingEvents: 24 },
    timing: SHORT_RUN_TIMING,
    plan: {
      ...base.plan,
      workerKills: 1,
      sigterm: false,
      redisOutage: false,
      mongoOutage: false,
      slackFailures: false,
      clio429: false,
      firstAtMs: 6_000,
      gapMs: [2_000, 4_000],
      faultHitWaitMs: 40_000,
      busyWaitMs: 5_000,
    },
    settleMs: 10 * 60_000,
    // A killed worker's jobs are taken over after 5 s instead of 30.
    env: { JOB_LOCK_MS: '5000' },
  };
}

export async function runChaos(config: ChaosConfig): Promise<ChaosResult> {
  const started = Date.now();
  const { say } = config;
  const rng = seededRng(config.seed);
  const ledger = new Ledger();
  const cluster = await Cluster.start({
    runDir: config.runDir,
    ...(config.mongodbUri === undefined ? {} : { mongodbUri: config.mongodbUri }),
    ...(config.env === undefined ? {} : { env: config.env }),
    ...(config.redis === undefined ? {} : { redis: config.redis }),
    say,
  });
  try {
    const firms = await createFirms(cluster, ledger, config.timing, config.eventsOut ?? true);
    ledger.redisMemory.start = (await usedMemory(cluster)) ?? undefined;
    if (config.redisHeadroom !== undefined && config.redis !== 'cluster') {
      cluster.redisMaxMemory = (ledger.redisMemory.start ?? 0) + config.redisHeadroom;
      ledger.redisMemory.max = cluster.redisMaxMemory;
      await cluster.applyRedisLimit();
      say(`Redis maxmemory ${(cluster.redisMaxMemory / 1048576).toFixed(1)} MiB (noeviction)`);
    }
    const workload = new Workload(cluster, ledger, firms, config.sizes, config.timing, rng.fork('workload'));
    const faults = new Faults(cluster, ledger, workload, config.plan, rng.fork('faults'), say);
    faults.startMonitor();
    say(
      `workload: ${config.sizes.campaignLeads}-lead campaign, ${config.sizes.directCalls} direct calls, ` +
        `${config.sizes.importRows}-row import, ${config.sizes.bookingEvents} booking events (seed ${config.seed})`,
    );
    await Promise.all([
      workload.run().then(() => say('workload sent and acknowledged')),
      faults.run().then(() => say('fault schedule done')),
    ]);
    say('waiting for the service to finish what it acknowledged ...');
    const checked = {
      cluster,
      ledger,
      firms,
      timing: config.timing,
      faults,
      workload,
      redisGrowthBudget: config.redisGrowthBudget,
      say,
    };
    const settled = await settle(checked, config.settleMs);
    await faults.stopMonitor();
    const rows = await checkInvariants(checked);
    rows.unshift({
      name: 'the service finished everything it acknowledged',
      expected: `within ${Math.round(config.settleMs / 60_000)} min`,
      actual: settled ? `yes (run ${((Date.now() - started) / 60_000).toFixed(1)} min)` : 'no: timed out',
      ok: settled,
    });
    const result: ChaosResult = {
      rows,
      ok: rows.every((r) => r.ok),
      durationMs: Date.now() - started,
      ledger,
    };
    await writeFile(
      join(config.runDir, 'report.json'),
      JSON.stringify(
        {
          seed: config.seed,
          redis: config.redis ?? 'single',
          sizes: config.sizes,
          ok: result.ok,
          durationMs: result.durationMs,
          rows,
          faults: ledger.faults,
          sigterms: ledger.sigterms,
          probes: ledger.probes,
          redisMemory: ledger.redisMemory,
          bookingEvents: ledger.bookingEvents,
          bookings: [...ledger.bookings.values()],
          directCalls: ledger.directCalls,
        },
        null,
        2,
      ),
    );
    return result;
  } finally {
    await cluster.stop();
  }
}

/** The invariant table as text: name, expected, actual, ✓/✗. */
export function formatTable(rows: Row[]): string {
  const width = (k: 'name' | 'expected' | 'actual', max: number) =>
    Math.min(max, Math.max(k.length, ...rows.map((r) => r[k].length)));
  const w = { name: width('name', 72), expected: width('expected', 40), actual: width('actual', 70) };
  const cell = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text.padEnd(n));
  const line = (a: string, b: string, c: string, d: string) =>
    `| ${cell(a, w.name)} | ${cell(b, w.expected)} | ${cell(c, w.actual)} | ${d} |`;
  return [
    line('invariant', 'expected', 'actual', ' '),
    `|${'-'.repeat(w.name + 2)}|${'-'.repeat(w.expected + 2)}|${'-'.repeat(w.actual + 2)}|---|`,
    ...rows.map((r) => line(r.name, r.expected, r.actual, r.ok ? '✓' : '✗')),
  ].join('\n');
}
