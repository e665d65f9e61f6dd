// The cost of one intake end to end (docs/performance.md): N simulated calls placed through
// create-outbound-call, each played by the simulator, analysed, and its effects done — the lead,
// the Clio contact and matter, the mail and the Slack post — against local Clio, SMTP and Slack
// servers running in this bench process (their CPU is the bench's, not the stack's).
//   cpu_per_call_ms       CPU seconds of every process of the stack (web, worker, Redis, FerretDB,
//                         PostgreSQL) over the burst until every queue is empty, ÷ N, in ms;
//                         printed per process beside Redis commands per call.
//   capacity_calls_per_s  N ÷ the burst's wall time (the soak's capacity probe, as a row).
// Both are absolute: the baseline is a figure recorded from main at the start of the work, in
// the same session and conditions (BENCH_COST_BASELINE_CPU_MS, BENCH_COST_BASELINE_CAPACITY);
// without one the ratio is not computed. Knobs: BENCH_COST_CALLS (120), BENCH_COST_ROUNDS (2),
// BENCH_COST_CONCURRENCY (10 requests in flight). The simulator's own jobs run in the worker and
// are counted in it (it is the voice provider the service runs with here).
import { setTimeout as sleep } from 'node:timers/promises';
import { QUEUE_NAMES } from '../../jobs/queues.js';
import { startFakeClio } from '../../test/fakes/clio-server.js';
import { startFakeSlack } from '../../test/fakes/slack-server.js';
import { startFakeSmtp } from '../../test/fakes/smtp-server.js';
import { api, atExit, createApp, makeTenant, type App, type Tenant } from '../lib/stack.js';
import {
  checkInterrupted,
  descendants,
  knob,
  loadAverage,
  loop,
  processCpuSeconds,
  say,
} from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';

const CALLS = knob('BENCH_COST_CALLS', 120, 20_000);
const ROUNDS = knob('BENCH_COST_ROUNDS', 2, 10);
const CONCURRENCY = knob('BENCH_COST_CONCURRENCY', 10, 500);
const SIM_CALL_MS = 2000;

/** A recorded figure from the environment; NaN when none was given. */
function recorded(name: string): number {
  const raw = process.env[name];
  const x = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(x) && x > 0 ? x : NaN;
}

/** Jobs left to run in any queue (scheduled maintenance excluded). */
async function backlog(app: App): Promise<number> {
  let left = 0;
  for (const name of QUEUE_NAMES) {
    const queue = app.queues[name];
    const c = await queue.getJobCounts('waiting', 'active', 'prioritized', 'delayed');
    const delayed = Math.max(0, c.delayed! - (await queue.getJobSchedulersCount()));
    left += c.waiting! + c.active! + c.prioritized! + delayed;
  }
  return left;
}

/** CPU seconds so far of the stack's processes, by group: the named ones, then by command. */
function stackCpu(named: Map<number, string>): Map<string, number> {
  const out = new Map<string, number>();
  const all = descendants();
  for (const [pid, name] of named) all.set(pid, name);
  for (const [pid, name] of all) {
    const group = named.get(pid) ?? (name.startsWith('postgres') ? 'postgres' : name);
    if (group === 'node' || group === 'esbuild') continue; // the bench's own (tsx's esbuild)
    const used = processCpuSeconds(pid);
    if (Number.isFinite(used)) out.set(group, (out.get(group) ?? 0) + used);
  }
  return out;
}

/** Redis commands so far, by command (INFO commandstats; EVALSHA is each script run, not its calls). */
async function redisCommands(app: App): Promise<Map<string, number>> {
  const stats = await app.redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) out.set(m[1]!, Number(m[2]));
  return out;
}

/**
 * The commands per call between two readings, less the bench's own polls of the backlog (`polls`
 * times what one poll costs, `poll`): the total and the busiest few.
 */
function commandsPerCall(
  before: Map<string, number>,
  after: Map<string, number>,
  poll: Map<string, number>,
  polls: number,
): string {
  const per = [...after.entries()]
    .map(([cmd, n]) => [cmd, (n - (before.get(cmd) ?? 0) - polls * (poll.get(cmd) ?? 0)) / CALLS] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  const total = per.reduce((a, [, n]) => a + n, 0);
  const top = per
    .slice(0, 8)
    .map(([cmd, n]) => `${cmd} ${n.toFixed(0)}`)
    .join(', ');
  return `${total.toFixed(0)} Redis commands per call (${top})`;
}

async function burst(
  app: App,
  base: string,
  t: Tenant,
  named: Map<number, string>,
  round: number,
): Promise<{ cpuMs: number; capacity: number; breakdown: string }> {
  const before = stackCpu(named);
  const commandsBefore = await redisCommands(app);
  const started = performance.now();
  await loop(CONCURRENCY, CALLS, (i) =>
    api(base, 'POST', '/api/v2/create-outbound-call', t.key, {
      toNumber: `+1415${String(3_000_001 + round * CALLS + i)}`,
      agentId: t.agentId,
      firmSlug: t.slug,
      dynamicVariables: { full_name: `Caller ${round}-${i}`, email: `caller.${round}.${i}@example.com` },
    }),
  );
  const until = Date.now() + 15 * 60_000;
  let polls = 1;
  while ((await backlog(app)) > 0) {
    polls += 1;
    checkInterrupted();
    if (Date.now() > until) throw new Error('intake-cost: the burst did not drain in 15 minutes');
    await sleep(100);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = stackCpu(named);
  const per = new Map<string, number>();
  for (const [group, used] of after) per.set(group, (used - (before.get(group) ?? 0)) / CALLS);
  const total = [...per.values()].reduce((a, b) => a + b, 0);
  const commandsAfter = await redisCommands(app);
  // What one poll of the backlog costs, read on the idle queues (each reading is one INFO more).
  const idle = await redisCommands(app);
  await backlog(app);
  const polled = await redisCommands(app);
  const poll = new Map(
    [...polled].map(([cmd, n]) => [cmd, n - (idle.get(cmd) ?? 0) - (cmd === 'info' ? 1 : 0)]),
  );
  const commands = commandsPerCall(commandsBefore, commandsAfter, poll, polls);
  const breakdown = [...per.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([g, s]) => `${g} ${(s * 1000).toFixed(1)}`)
    .join(', ');
  return {
    cpuMs: total * 1000,
    capacity: CALLS / seconds,
    breakdown: `CPU per call, ms: ${breakdown}; ${commands}`,
  };
}

export const intakeCost: Scenario = {
  name: 'intake-cost',
  ids: ['cpu_per_call_ms', 'capacity_calls_per_s'],
  async run(ctx) {
    const clio = await startFakeClio(`clio_${Date.now()}`);
    const slack = await startFakeSlack();
    const smtp = await startFakeSmtp();
    atExit(async () => {
      await clio.close();
      await slack.close();
      await smtp.stop();
    });
    const app = await createApp(ctx.stores, 'intake-cost', {
      SIM_CALL_MS: String(SIM_CALL_MS),
      SMTP_URL: smtp.url,
      MAIL_FROM: 'intake@service.test',
      CLIO_BASE_URL: clio.url,
    });
    const web = await app.startWeb();
    const worker = await app.startWorker('worker');
    const named = new Map([
      [web.pid, 'web'],
      [worker.pid, 'worker'],
    ]);
    const tenant = await makeTenant(app, web.base, {
      timezone: 'UTC',
      max_concurrent_calls: 1000,
      notification_emails: ['intake@lawfirm.test'],
      slack_webhook_url: slack.webhookUrl(),
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    // A warm-up burst (JIT, connection pools, indexes in cache), not measured.
    say(`intake-cost: warm-up, then ${ROUNDS} × ${CALLS} calls; load average ${loadAverage()}`);
    await burst(app, web.base, tenant, named, 0);
    const cpu: number[] = [];
    const capacity: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await burst(app, web.base, tenant, named, round);
      say(
        `intake-cost round ${round}: ${r.cpuMs.toFixed(1)} ms CPU per call, ${r.capacity.toFixed(2)} calls/s; ${r.breakdown}; load average ${loadAverage()}`,
      );
      cpu.push(r.cpuMs);
      capacity.push(r.capacity);
    }
    await app.close();
    const cpuBaseline = recorded('BENCH_COST_BASELINE_CPU_MS');
    const capacityBaseline = recorded('BENCH_COST_BASELINE_CAPACITY');
    const rows: Row[] = [
      ratioRow(
        {
          id: 'cpu_per_call_ms',
          label: 'stack CPU per analysed call, ms',
          unit: 'ms',
          baselineLabel: 'main at the start (BENCH_COST_BASELINE_CPU_MS)',
          target: { op: '<=', limit: 80, on: 'value' },
        },
        cpu,
        cpu.map(() => cpuBaseline),
      ),
      ratioRow(
        {
          id: 'capacity_calls_per_s',
          label: 'analysed calls end to end, /s',
          unit: '/s',
          baselineLabel: 'main at the start (BENCH_COST_BASELINE_CAPACITY)',
          ...(Number.isFinite(capacityBaseline) ? { target: { op: '>=', limit: 3 } } : {}),
        },
        capacity,
        capacity.map(() => capacityBaseline),
      ),
    ];
    return rows;
  },
};
