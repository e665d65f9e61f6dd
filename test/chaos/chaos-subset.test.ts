// The bounded subset of the fault matrix (scripts/chaos, `npm run chaos`): the real web process
// and two real worker processes over a Redis of their own (persistent, as in production) and the
// run's FerretDB, a small workload of every kind (a campaign, direct calls, an import, booking
// stories, every call_analyzed delivered twice; each firm's webhook endpoint subscribed to every
// event), one worker SIGKILLed and started again, one Redis stop and start, Slack failing half of
// its requests for a while and Clio answering 429 now and then. Every invariant of the full run
// must hold, events out included.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  SHORT_RUN_TIMING,
  defaultConfig,
  formatTable,
  runChaos,
  type ChaosConfig,
} from '../../scripts/chaos/run.js';
import { freshMongoUri } from '../helpers/stack.js';

let runDir: string | undefined;
let keepLogs = false;
afterAll(async () => {
  if (runDir !== undefined && !keepLogs) await rm(runDir, { recursive: true, force: true });
});

function subsetConfig(dir: string): ChaosConfig {
  const base = defaultConfig(20_260_512, 1, dir, (line) => {
    if (process.env.TEST_LOG_LEVEL !== undefined) process.stderr.write(`[chaos subset] ${line}\n`);
  });
  return {
    ...base,
    sizes: { campaignLeads: 40, directCalls: 10, importRows: 200, bookingEvents: 24 },
    // Soon bookings start 12–20 s after they are made (the short run's 25–40 s): their reminders
    // fall due, and are checked, while the run is still settling its other work.
    timing: { ...SHORT_RUN_TIMING, soonStartMs: [12_000, 20_000] },
    plan: {
      workerKills: 1,
      sigterm: false,
      redisOutage: true,
      mongoOutage: false,
      slackFailures: true,
      clio429: true,
      outageMs: 5_000,
      firstAtMs: 4_000,
      gapMs: [2_000, 4_000],
      slackWindowMs: 10_000,
      clio429Rate: 0.2,
      faultHitWaitMs: 40_000,
      busyWaitMs: 5_000,
    },
    // The service finishes what it acknowledged in about 30 s on an idle two-core machine (the
    // whole test takes about 55 s); the loaded CI machine is several times slower. The settle
    // ends as soon as everything is done: this only bounds a run that never finishes.
    settleMs: 240_000,
    mongodbUri: freshMongoUri(),
    // A killed worker's jobs are taken over after 5 s instead of 30, and so are its effects.
    env: { JOB_LOCK_MS: '5000', EFFECT_LEASE_MS: '5000', EFFECT_LEASE_CLOCK_MARGIN_MS: '500' },
  };
}

describe('chaos subset: one worker kill and one Redis restart under a mixed workload', () => {
  // 600 s: the web and worker processes' start under tsx, the workload and the faults, a settle
  // of up to 240 s and the processes' stop, on a loaded two-core machine.
  it('keeps every invariant: nothing lost, nothing done twice, no 200 for missing work', async () => {
    runDir = await mkdtemp(join(tmpdir(), 'chaos-subset-'));
    const result = await runChaos(subsetConfig(runDir));
    const failed = result.rows.filter((r) => !r.ok);
    keepLogs = failed.length > 0;
    console.log(formatTable(result.rows));
    expect(failed, `logs in ${runDir}\n${formatTable(result.rows)}`).toEqual([]);
    // The faults did happen.
    expect(result.ledger.faults.map((f) => f.kind).sort()).toEqual([
      'Redis stop/start',
      'SIGKILL worker',
      'slack 50% failures',
    ]);
    expect(result.ledger.probes.some((p) => p.fault === 'redis' && p.target === 'readyz')).toBe(true);
  }, 600_000);
});
