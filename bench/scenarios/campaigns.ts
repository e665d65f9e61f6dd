// Campaign launch and fan-out at scale (the web and worker processes as children).
//   (a) launch response time (POST .../launch) at BENCH_CAMPAIGN_LEADS (50,000) leads ÷ at 100:
//       the launch must not grow with the leads (≤ 2). No worker runs while launching.
//   (b) the fan-out of each large campaign in the real worker process (campaigns queue only,
//       one job at a time, a fresh process per round): jobs/s from the job's start to its end,
//       ÷ a bare Queue.addBulk of as many jobs of the same shape (ids, priorities, payload,
//       options) in chunks of the same size on the same Redis, alternated with it.
//   (c) the worker's RSS as each fan-out starts and its peak during it.
// The firm's calling window is closed, so no call is dialled: only the fan-out is measured.
import { JOBS } from '../../jobs/table.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import {
  campaignFanoutsCollection,
  campaignPhonePagesCollection,
  campaignPhonesCollection,
  phonePageId,
} from '../../core/domain/campaigns/campaign-store.js';
import { knob, median, RssSampler, say, StackCpu } from '../lib/measure.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { api, createApp, makeTenant, rand, type App } from '../lib/stack.js';
import { launchFanoutJob } from '../../core/domain/campaigns/campaigns.js';

const PER_REQUEST = 5000;
const CHUNK = 500; // CAMPAIGN_FANOUT_CHUNK's default

/**
 * The i-th distinct valid US number of a run (212-2xx-xxxx), never ending in 0000 or 9999 (the
 * simulator leaves those unanswered or refuses them): every lead's call connects.
 */
export const phone = (i: number): string =>
  `+1212${200 + Math.floor(i / 9998)}${String((i % 9998) + 1).padStart(4, '0')}`;

/** A draft campaign of `size` distinct callable leads, added 5,000 per request. */
export async function makeCampaign(
  base: string,
  key: string,
  slug: string,
  agentId: string,
  size: number,
  name: string,
): Promise<string> {
  const t = performance.now();
  const leads = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ phone: phone(from + i), first_name: `Lead ${from + i}` }));
  const first = Math.min(size, PER_REQUEST);
  const { id } = await api<{ id: string }>(base, 'POST', '/api/leads/campaigns', key, {
    firmSlug: slug,
    name,
    agentId,
    // Its leads carry no consent: an informational campaign calls them all on this stack
    // (INFORMATIONAL_CONSENT=false).
    purpose: 'informational',
    leads: leads(0, first),
  });
  for (let from = first; from < size; from += PER_REQUEST) {
    await api(base, 'POST', `/api/leads/campaigns/${id}/leads`, key, {
      leads: leads(from, Math.min(PER_REQUEST, size - from)),
    });
  }
  if (size >= PER_REQUEST)
    say(`made a ${size}-lead campaign in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return id;
}

/** A bare addBulk of `size` campaign-call jobs shaped as the fan-out adds them; jobs/s. */
async function bareAddBulk(app: App, campaignId: string, firm: string, size: number): Promise<number> {
  const queue = app.queues.campaigns;
  const def = JOBS.campaignCall;
  const t = performance.now();
  for (let from = 0; from < size; from += CHUNK) {
    await queue.addBulk(
      Array.from({ length: Math.min(CHUNK, size - from) }, (_, i) => {
        const data = { campaignId, firm, phone: phone(from + i), attempt: 1 };
        return {
          name: def.name,
          data,
          opts: { ...def.options, jobId: def.id!(data), priority: from + i + 1 },
        };
      }),
    );
  }
  return size / ((performance.now() - t) / 1000);
}

/** The campaign's phone pages, read by _id one after another (as the fan-out reads them). */
async function* pagesOf(app: App, campaignId: string): AsyncGenerator<string[]> {
  const pages = campaignPhonePagesCollection(app.db);
  for (let n = 0; ; n++) {
    const page = await pages.findOne({ _id: phonePageId(campaignId, n) });
    if (page === null) return;
    yield page.phones;
  }
}

/**
 * The fan-out's own operations issued directly from this process, one after another: the point
 * reads of the campaign's phone pages, an addBulk of each chunk of the same jobs, a checkpoint
 * update after each; jobs/s.
 */
async function directFanout(app: App, campaignId: string, firm: string): Promise<number> {
  const def = JOBS.campaignCall;
  const checkpoints = campaignFanoutsCollection(app.db);
  const checkpointId = `bench_${rand()}`;
  const t = performance.now();
  let added = 0;
  for await (const phones of pagesOf(app, campaignId)) {
    for (let from = 0; from < phones.length; from += CHUNK) {
      const chunk = phones.slice(from, from + CHUNK);
      await app.queues.campaigns.addBulk(
        chunk.map((phone, i) => {
          const data = { campaignId, firm, phone, attempt: 1 };
          return {
            name: def.name,
            data,
            opts: { ...def.options, jobId: def.id!(data), priority: added + i + 1 },
          };
        }),
      );
      added += chunk.length;
      await checkpoints.updateOne(
        { _id: checkpointId },
        { $set: { added, done: false, updated_at: new Date() } },
        { upsert: true },
      );
    }
  }
  const seconds = (performance.now() - t) / 1000;
  await checkpoints.deleteOne({ _id: checkpointId });
  return added / seconds;
}

/** The fan-out's reads alone (the campaign's phone pages by _id): phones/s. */
async function pagesRead(app: App, campaignId: string): Promise<number> {
  const t = performance.now();
  let n = 0;
  for await (const phones of pagesOf(app, campaignId)) n += phones.length;
  return n / ((performance.now() - t) / 1000);
}

/** What the fan-out read before phone pages: the campaign's claims, one cursor sorted by _id; claims/s. */
async function claimsRead(app: App, campaignId: string): Promise<number> {
  const t = performance.now();
  let n = 0;
  const cursor = campaignPhonesCollection(app.db)
    .find({ campaign_id: campaignId }, { projection: { _id: 1, phone: 1 } })
    .sort({ _id: 1 })
    .batchSize(CHUNK);
  for await (const claim of cursor) if (claim._id) n++;
  return n / ((performance.now() - t) / 1000);
}

export const campaigns: Scenario = {
  name: 'campaigns',
  ids: [
    'launch_50k_vs_100',
    'fanout_vs_addbulk',
    'fanout_vs_direct',
    'fanout_vs_pages_read',
    'fanout_vs_claims_read',
    'worker_rss_fanout_mb',
  ],
  async run(ctx) {
    const large = knob('BENCH_CAMPAIGN_LEADS', 50_000, 200_000);
    const small = 100;
    const app = await createApp(ctx.stores, 'campaigns', { CAMPAIGN_FANOUT_CHUNK: String(CHUNK) });
    try {
      const web = await app.startWeb();
      // A calling window twelve hours away (UTC): campaign calls wait, nothing is dialled.
      const away = new Date(Date.now() + 12 * 3600_000).toISOString().slice(11, 13);
      const t = await makeTenant(app, web.base, {
        timezone: 'UTC',
        max_concurrent_calls: 1000,
        calling_window: { start: `${away}:00`, end: `${away}:59`, days: [1, 2, 3, 4, 5, 6, 7] },
      });
      const launch = async (id: string, expected: number): Promise<number> => {
        const started = performance.now();
        const res = await api<{ calls_queued: number }>(
          web.base,
          'POST',
          `/api/leads/campaigns/${id}/launch`,
          t.key,
        );
        const ms = performance.now() - started;
        if (res.calls_queued !== expected)
          throw new Error(`calls_queued ${res.calls_queued}, expected ${expected}`);
        return ms;
      };
      const cancel = (id: string) => api(web.base, 'POST', `/api/leads/campaigns/${id}/cancel`, t.key);

      // Warm-up: the first launches of a process pay for compiling and connecting.
      for (let i = 0; i < 3; i++) {
        const id = await makeCampaign(web.base, t.key, t.slug, t.agentId, 10, `warm ${i}`);
        await launch(id, 10);
        await cancel(id);
      }
      const largeIds: string[] = [];
      // Three small launches around each large one: a launch is a single short request, so the
      // round's baseline is the median of three.
      const smallIds: string[][] = [];
      for (let i = 0; i < ctx.rounds; i++) {
        largeIds.push(await makeCampaign(web.base, t.key, t.slug, t.agentId, large, `large ${i}`));
        const three: string[] = [];
        for (let j = 0; j < 3; j++)
          three.push(await makeCampaign(web.base, t.key, t.slug, t.agentId, small, `small ${i}.${j}`));
        smallIds.push(three);
      }
      await app.queues.campaigns.obliterate({ force: true });

      const smallMs: number[] = [];
      const largeMs: number[] = [];
      const fanoutRates: number[] = [];
      const bareRates: number[] = [];
      const directRates: number[] = [];
      const readRates: number[] = [];
      const claimRates: number[] = [];
      let fanoutCores = '';
      const rssStart: number[] = [];
      const rssPeak: number[] = [];
      for (let round = 0; round < ctx.rounds; round++) {
        // (a) small, large, small, small: the large one between small ones.
        const [s1, s2, s3] = smallIds[round]!;
        const smallRound = [await launch(s1!, small)];
        largeMs.push(await launch(largeIds[round]!, large));
        smallRound.push(await launch(s2!, small), await launch(s3!, small));
        smallMs.push(median(smallRound));
        for (const id of smallIds[round]!) await cancel(id);

        // (b) + (c): a fresh worker fans the large campaign out, alone.
        const campaignId = largeIds[round]!;
        const worker = await app.startWorker(`worker${round}`, {
          WORKER_QUEUES: 'campaigns',
          WORKER_CONCURRENCY: '1',
        });
        const sampler = new RssSampler(worker.pid, 20);
        let startRss = NaN;
        const fanoutJob = JOBS.campaignFanout.id!((await launchFanoutJob(app.db, campaignId, t.slug))!);
        const fanouts = app.db.collection<{ _id: string; added?: number }>(COLLECTIONS.campaignFanouts);
        // RSS at each quarter of the fan-out (by its checkpoint): flat if memory does not grow with the leads.
        const quarters: string[] = [];
        let job;
        let stack: StackCpu | undefined;
        for (let tick = 0; ; tick++) {
          job = await app.queues.campaigns.getJob(fanoutJob);
          if (Number.isNaN(startRss) && job?.processedOn !== undefined) {
            startRss = worker.rss();
            sampler.start();
            stack = new StackCpu(new Map([[worker.pid, 'worker']]));
          }
          if (job?.finishedOn !== undefined) break;
          if (job?.failedReason) throw new Error(`fan-out failed: ${job.failedReason}`);
          if (tick % 10 === 0 && quarters.length < 3) {
            const added = (await fanouts.findOne({ _id: campaignId }))?.added ?? 0;
            while (quarters.length < 3 && added >= (large * (quarters.length + 1)) / 4)
              quarters.push(`${(quarters.length + 1) * 25}%: ${worker.rss().toFixed(0)}`);
          }
          await sleep(10);
        }
        const peak = sampler.stop();
        fanoutCores = stack?.read() ?? '';
        await worker.stop();
        const progress = await fanouts.findOne({ _id: campaignId });
        if (progress?.added !== large) throw new Error(`the fan-out added ${String(progress?.added)} jobs`);
        const seconds = (job.finishedOn! - job.processedOn!) / 1000;
        fanoutRates.push(large / seconds);
        rssStart.push(startRss);
        rssPeak.push(peak);
        await cancel(campaignId);
        await app.queues.campaigns.obliterate({ force: true });

        // The baselines, right after, on the same (now empty) queue: the fan-out's own
        // operations issued directly (the same claims), then the addBulks alone.
        directRates.push(await directFanout(app, campaignId, t.slug));
        readRates.push(await pagesRead(app, campaignId));
        claimRates.push(await claimsRead(app, campaignId));
        await app.queues.campaigns.obliterate({ force: true });
        bareRates.push(await bareAddBulk(app, `bare_${rand()}`, t.slug, large));
        await app.queues.campaigns.obliterate({ force: true });
        say(
          `campaigns round ${round + 1}: launch ${smallMs[round]!.toFixed(1)} ms at ${small}, ${largeMs[round]!.toFixed(1)} ms at ${large} · ` +
            `fan-out ${fanoutRates[round]!.toFixed(0)} jobs/s (${seconds.toFixed(1)} s) · direct ${directRates[round]!.toFixed(0)} · pages read ${readRates[round]!.toFixed(0)}/s · claims read ${claimRates[round]!.toFixed(0)}/s · bare addBulk ${bareRates[round]!.toFixed(0)} jobs/s · ` +
            `worker RSS ${startRss.toFixed(0)} → peak ${peak.toFixed(0)} MiB (${quarters.join(', ') || 'too fast to sample'})`,
        );
      }
      const k = `${Math.round(large / 1000)}k`;
      const rows: Row[] = [
        ratioRow(
          {
            id: 'launch_50k_vs_100',
            label: `launch response, ${k} leads`,
            unit: 'ms',
            baselineLabel: `at ${small} leads`,
            target: { op: '<=', limit: 2 },
          },
          largeMs,
          smallMs,
        ),
        ratioRow(
          {
            id: 'fanout_vs_addbulk',
            label: `fan-out of ${k} leads (worker)`,
            unit: 'jobs/s',
            baselineLabel: `bare addBulk of the same jobs (chunks of ${CHUNK})`,
            target: { op: '>=', limit: 0.6 },
          },
          fanoutRates,
          bareRates,
        ),
        ratioRow(
          {
            id: 'fanout_vs_direct',
            label: `fan-out of ${k} leads (worker)`,
            unit: 'jobs/s',
            baselineLabel: 'its own ops issued directly (page reads, addBulk, checkpoint)',
          },
          fanoutRates,
          directRates,
        ),
        ratioRow(
          {
            id: 'fanout_vs_pages_read',
            label: `fan-out of ${k} leads (worker)`,
            unit: 'jobs/s',
            baselineLabel: 'its reads alone (phone pages by _id), phones/s',
            note:
              "The fan-out reads the campaign's phone pages (5,000 phones each, written by each add of leads) " +
              "by _id, a page ahead, and writes its checkpoint off the adds' path (one write at a time, the latest count). " +
              `During the last fan-out, ${fanoutCores}.`,
          },
          fanoutRates,
          readRates,
        ),
        ratioRow(
          {
            id: 'fanout_vs_claims_read',
            label: `fan-out of ${k} leads (worker)`,
            unit: 'jobs/s',
            baselineLabel: 'what it read before: the claims cursor, claims/s',
            note:
              "Before phone pages the fan-out read the campaign's phone claims with one cursor sorted by _id; " +
              'FerretDB 1.24 answers that by scanning the collection and sorting every match in its own memory, ' +
              'which bounded the fan-out at about this rate.',
          },
          fanoutRates,
          claimRates,
        ),
        ratioRow(
          {
            id: 'worker_rss_fanout_mb',
            label: `worker RSS peak during the ${k} fan-out`,
            unit: 'MiB',
            baselineLabel: 'RSS as it started',
            target: { op: '<', limit: 250, on: 'value' },
          },
          rssPeak,
          rssStart,
        ),
      ];
      say(`campaigns: launch medians ${median(smallMs).toFixed(1)} / ${median(largeMs).toFixed(1)} ms`);
      return rows;
    } finally {
      await app.close();
    }
  },
};
