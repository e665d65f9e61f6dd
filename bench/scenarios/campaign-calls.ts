// Campaign calls end to end, and scale-out: the web process and one or two worker processes
// (every queue each, as the Procfile's `worker` runs them) as children, the simulator voice
// provider with SIM_CALL_MS tiny, a firm with max_concurrent_calls 1000 and no calling window.
//   (a) a BENCH_E2E_LEADS (5,000) lead campaign with ONE worker: calls placed per second from
//       the launch to the last call placed (each lead's place-call job done: the simulator has
//       the call), ÷ the configured dial ceiling (the calls queue's limiter, which bounds it
//       whatever the hardware); also the time until the campaign is completed (every call
//       ended, analysed and settled).
//   (b) scale-out: a second campaign of the same size, placed in alternating windows of
//       BENCH_SCALE_SECONDS with one worker process and with two; calls placed per second in
//       each window (the second worker is started, and stopped with SIGTERM, between windows).
import { QueueEvents } from 'bullmq';
import { QUEUE, QUEUE_SETTINGS } from '../../jobs/queues.js';
import { createRedis } from '../../core/platform/redis.js';
import { knob, RssSampler, say, StackCpu } from '../lib/measure.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { api, createApp, makeTenant, type Proc } from '../lib/stack.js';
import { makeCampaign } from './campaigns.js';

/** Counts the calls placed (place-call jobs done with outcome "placed") as they happen. */
class PlacedCounter {
  times: number[] = [];
  constructor(private readonly events: QueueEvents) {
    events.on('completed', ({ returnvalue }) => {
      const value: unknown = typeof returnvalue === 'string' ? safeParse(returnvalue) : returnvalue;
      if ((value as { outcome?: string } | null)?.outcome === 'placed') this.times.push(performance.now());
    });
  }
  get count(): number {
    return this.times.length;
  }
  between(from: number, to: number): number {
    return this.times.filter((t) => t >= from && t < to).length;
  }
  async waitFor(n: number, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    let told = Date.now();
    while (this.count < n) {
      if (Date.now() > until)
        throw new Error(`only ${this.count} of ${n} calls placed in ${timeoutMs / 1000} s`);
      if (Date.now() - told > 15_000) {
        told = Date.now();
        say(`campaign-calls: ${this.count} of ${n} calls placed`);
      }
      await sleep(50);
    }
  }
}

const safeParse = (s: string): unknown => {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
};

export const campaignCalls: Scenario = {
  name: 'campaign-calls',
  ids: [
    'campaign_e2e_calls_per_s',
    'campaign_e2e_completed_per_s',
    'two_workers_vs_one',
    'worker_rss_load_mb',
    'worker_rss_idle_mb',
  ],
  async run(ctx) {
    const leads = knob('BENCH_E2E_LEADS', 5000, 100_000);
    const windowSeconds = knob('BENCH_SCALE_SECONDS', 8, 300);
    const app = await createApp(ctx.stores, 'campaign-calls', {
      SIM_CALL_MS: String(knob('BENCH_SIM_CALL_MS', 50, 60_000)),
    });
    const eventsConnection = createRedis({ url: ctx.stores.redisUrl }, 'worker');
    const events = new QueueEvents(QUEUE.calls, { connection: eventsConnection, prefix: app.prefix });
    try {
      await events.waitUntilReady();
      const placed = new PlacedCounter(events);
      const web = await app.startWeb();
      const t = await makeTenant(app, web.base, { timezone: 'UTC', max_concurrent_calls: 1000 });
      const ceiling = QUEUE_SETTINGS[QUEUE.calls].limiter;
      const ceilingPerSecond = ceiling === undefined ? Infinity : (ceiling.max * 1000) / ceiling.duration;
      const workers: Proc[] = [await app.startWorker('w1')];
      const idleRss = workers[0]!.rss();
      const campaignStatus = async (id: string) =>
        api<{ status: string; calls_placed: number; calls_completed: number; calls_failed: number }>(
          web.base,
          'GET',
          `/api/leads/campaigns/${id}`,
          t.key,
        );

      // Warm-up: a small campaign through the whole pipeline.
      const warm = await makeCampaign(web.base, t.key, t.slug, t.agentId, 50, 'warm-up');
      await api(web.base, 'POST', `/api/leads/campaigns/${warm}/launch`, t.key);
      await placed.waitFor(50, 120_000);

      // (a) one worker, the whole campaign.
      const e2e = await makeCampaign(web.base, t.key, t.slug, t.agentId, leads, 'end to end');
      const load = new RssSampler(workers[0]!.pid, 100).start();
      const base = placed.count;
      const e2eWatch = new StackCpu(
        new Map([
          [web.pid, 'web'],
          [workers[0]!.pid, 'worker'],
        ]),
      );
      const launchedAt = performance.now();
      await api(web.base, 'POST', `/api/leads/campaigns/${e2e}/launch`, t.key);
      await placed.waitFor(base + leads, 30 * 60_000);
      const placedAt = placed.times[base + leads - 1]!;
      const e2eCpu = e2eWatch.read();
      // Then until every lead is settled; given up when nothing settles for a minute.
      let completedAt = NaN;
      let settled = -1;
      let lastProgress = performance.now();
      for (;;) {
        const s = await campaignStatus(e2e);
        if (s.status === 'completed') {
          completedAt = performance.now();
          break;
        }
        if (s.calls_completed + s.calls_failed > settled) {
          settled = s.calls_completed + s.calls_failed;
          lastProgress = performance.now();
        } else if (performance.now() - lastProgress > 60_000) {
          say(`campaign-calls: the campaign did not complete (${settled} of ${leads} leads settled)`);
          break;
        }
        await sleep(200);
      }
      load.stop();
      const e2eRate = leads / ((placedAt - launchedAt) / 1000);
      const completedRate = leads / ((completedAt - launchedAt) / 1000);
      say(
        `campaign-calls: ${leads} leads, one worker: all placed in ${((placedAt - launchedAt) / 1000).toFixed(1)} s ` +
          `(${e2eRate.toFixed(1)}/s), completed in ${((completedAt - launchedAt) / 1000).toFixed(1)} s`,
      );

      // (b) scale-out windows on a second campaign, sized so that it outlasts the windows.
      const windows = ctx.rounds * 2 * windowSeconds;
      const scaleLeads = Math.min(leads, Math.max(500, Math.ceil(e2eRate * 3 * (windows + ctx.rounds * 8))));
      const scale = await makeCampaign(web.base, t.key, t.slug, t.agentId, scaleLeads, 'scale-out');
      await api(web.base, 'POST', `/api/leads/campaigns/${scale}/launch`, t.key);
      const scaleBase = placed.count;
      await placed.waitFor(scaleBase + Math.min(100, Math.floor(scaleLeads / 10)), 120_000);
      const one: number[] = [];
      const two: number[] = [];
      const cpu: string[] = [];
      for (let round = 0; round < ctx.rounds; round++) {
        for (const n of [1, 2] as const) {
          while (workers.length < n) workers.push(await app.startWorker(`w${workers.length + 1}-${round}`));
          while (workers.length > n) await workers.pop()!.stop();
          await sleep(1000); // the change settles (jobs handed back, the new worker's first jobs)
          const watch = new StackCpu(
            new Map([
              [web.pid, 'web'],
              ...workers.map((w, i) => [w.pid, `worker ${i + 1}`] as [number, string]),
            ]),
          );
          const from = performance.now();
          await sleep(windowSeconds * 1000);
          const to = performance.now();
          const used = watch.read();
          const rate = placed.between(from, to) / ((to - from) / 1000);
          (n === 1 ? one : two).push(rate);
          cpu.push(`${n} worker${n === 1 ? '' : 's'}: ${used}`);
          say(
            `campaign-calls round ${round + 1}: ${rate.toFixed(1)} calls placed/s; ${cpu[cpu.length - 1]!}`,
          );
          if (placed.count - scaleBase >= scaleLeads) break;
        }
        if (placed.count - scaleBase >= scaleLeads) {
          say('campaign-calls: the scale-out campaign ran out of leads before the last window');
          break;
        }
      }
      await api(web.base, 'POST', `/api/leads/campaigns/${scale}/cancel`, t.key).catch(() => {});
      const n = Math.min(one.length, two.length);
      const rows: Row[] = [
        ratioRow(
          {
            id: 'campaign_e2e_calls_per_s',
            label: `${leads.toLocaleString('en')}-lead campaign, 1 worker, calls placed`,
            unit: 'calls/s',
            baselineLabel: 'the dial ceiling (calls queue limiter)',
            note:
              `From the launch to the last lead's call placed at the simulator (SIM_CALL_MS=${app.env.SIM_CALL_MS}, max_concurrent_calls 1000, no calling window); each call also ends, is analysed and settles meanwhile. ` +
              `Meanwhile, ${e2eCpu}.`,
          },
          [e2eRate],
          [ceilingPerSecond],
        ),
        ratioRow(
          {
            id: 'campaign_e2e_completed_per_s',
            label: `same campaign, leads settled (completed)`,
            unit: 'leads/s',
            baselineLabel: 'calls placed',
          },
          [completedRate],
          [e2eRate],
        ),
        ratioRow(
          {
            id: 'two_workers_vs_one',
            label: 'campaign calls placed, 2 workers',
            unit: 'calls/s',
            baselineLabel: '1 worker',
            // No target: one worker, FerretDB and PostgreSQL already use this machine's cores, so
            // a second worker process only competes for them. Scale-out is judged where the workers
            // are the bound (scaleout_effects_*, bench/scenarios/scale-effects.ts).
            note:
              `Alternating ${windowSeconds}-second windows of one ${scaleLeads.toLocaleString('en')}-lead campaign, with one worker process and with two (every queue each); ` +
              'a measure of the machine, not of the design: scale-out is judged by scaleout_effects_*. ' +
              `CPU in the last windows: ${cpu.slice(-2).join('; ')}.`,
          },
          two.slice(0, n),
          one.slice(0, n),
        ),
        ratioRow(
          {
            id: 'worker_rss_idle_mb',
            label: 'worker RSS idle (all queues)',
            unit: 'MiB',
            baselineLabel: 'itself',
          },
          [idleRss],
          [idleRss],
        ),
        ratioRow(
          {
            id: 'worker_rss_load_mb',
            label: 'worker RSS peak, campaign calls',
            unit: 'MiB',
            baselineLabel: 'idle',
          },
          [load.peak],
          [idleRss],
        ),
      ];
      return rows;
    } finally {
      await events.close().catch(() => {});
      eventsConnection.disconnect();
      await app.close();
    }
  },
};
