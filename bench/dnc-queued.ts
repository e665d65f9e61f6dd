// A do-not-call addition against a large queue: campaigns totalling BENCH_DNC_QUEUED calls
// (default 50,000) queued and parked — the firm's calling window closed for the next three hours
// on the service's clock, so every campaign-call job has asked the gate once and waits delayed —
// then BENCH_DNC_LISTED (default 1,000) of their numbers put on the firm's list by
// POST /api/compliance/dnc (BENCH_DNC_PER_REQUEST per request, default all in one). For each listed
// number: the time from the API's answer to its block taking effect (the `at` of its call's
// request-stage `block` decision), as p50/p95/p99/max. Then the window opens (the service's clock
// moves into it) and the listed numbers' jobs come due with BENCH_DNC_OTHERS (default 1,000) of
// the others, or every job with BENCH_DNC_DRAIN=all; from the simulator's dial log: none of the
// listed numbers dialled, every one of the others that came due dialled.
//   npx tsx bench/dnc-queued.ts   (BENCH_DNC_QUEUED=50000, BENCH_DNC_LISTED=1000,
//     BENCH_DNC_CAMPAIGNS=10, BENCH_DNC_PER_REQUEST=1000, BENCH_DNC_OTHERS=1000,
//     BENCH_DNC_DRAIN=sample|all, BENCH_WORKER_CONCURRENCY=16)
// Small: BENCH_DNC_QUEUED=2000 BENCH_DNC_LISTED=100 BENCH_DNC_CAMPAIGNS=2 BENCH_DNC_OTHERS=200
// (a minute or two). Not part of `npm test`. Starts its own Redis and FerretDB (the local ones),
// runs the web and worker in this process (the service's clock is shared), removes everything.
import { setTimeout as sleep } from 'node:timers/promises';
import { clock } from '../core/platform/clock.js';
import { COLLECTIONS } from '../core/platform/db/collections.js';
import { campaignCallId } from '../core/domain/campaigns/campaign-store.js';
import type { DialDecisionDoc } from '../core/domain/compliance/dial-decisions.js';
import { jobId } from '../jobs/define.js';
import { deadline, rand, startStores, runScript } from './lib/stack.js';
import { startInProcessApp } from './lib/in-process.js';
import { knob, loadAverage, percentile, say } from './lib/measure.js';

const QUEUED = knob('BENCH_DNC_QUEUED', 50_000, 200_000);
const LISTED = knob('BENCH_DNC_LISTED', 1000, 5000);
const CAMPAIGNS = knob('BENCH_DNC_CAMPAIGNS', 10, 100);
const PER_REQUEST = knob('BENCH_DNC_PER_REQUEST', LISTED, 5000);
const OTHERS = knob('BENCH_DNC_OTHERS', 1000, 200_000);
const DRAIN_ALL = process.env.BENCH_DNC_DRAIN === 'all';
const WORKER_CONCURRENCY = knob('BENCH_WORKER_CONCURRENCY', 16, 256);
const LEADS_PER_REQUEST = 5000;
const HOUR = 3600_000;

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** `f` on each item, `n` at once. */
async function inParallel<T>(items: T[], n: number, f: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await f(items[i]!, i);
      }
    }),
  );
}

async function main(): Promise<void> {
  deadline(60 * 60_000);
  if (LISTED > QUEUED) throw new Error('BENCH_DNC_LISTED must not exceed BENCH_DNC_QUEUED');
  const stores = await startStores();
  // The simulator's webhooks come back to this web process.
  const app = await startInProcessApp(stores, 'dnc-queued', {
    SIM_CALL_MS: '200',
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
    CAMPAIGN_DEFAULT_PURPOSE: 'informational',
    INFORMATIONAL_CONSENT: 'false',
  });
  app.startWorkers();
  const { services, admin } = app;
  const ok = async (
    res: Promise<{ status: number; body: unknown }>,
    what: string,
  ): Promise<Record<string, unknown>> => {
    const r = await res;
    if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as Record<string, unknown>;
  };

  // The service's clock at 06:00 UTC today; the firm calls 09:00–11:00 UTC.
  const sixAm = new Date(new Date().toISOString().slice(0, 10) + 'T06:00:00Z').getTime();
  clock.set(sixAm);
  const slug = `bench-${rand()}`;
  const window = { start: hhmm(sixAm + 3 * HOUR), end: hhmm(sixAm + 5 * HOUR), days: [1, 2, 3, 4, 5, 6, 7] };
  await ok(
    admin.post('/api/firms', {
      slug,
      name: 'Bench',
      settings: { timezone: 'UTC', calling_window: window, max_concurrent_calls: 1000 },
    }),
    'firm',
  );
  const agentId = (
    await ok(
      admin.post('/api/v2/create-agent', {
        firmSlug: slug,
        agent_name: 'Intake',
        voice_id: 'sim-en-us-ava',
        begin_message: 'Hello.',
        intake_questions: [{ key: 'full_name', question: 'Your name?' }],
      }),
      'agent',
    )
  ).agent_id as string;

  // The numbers, campaign by campaign.
  const phones = Array.from({ length: QUEUED }, (_, i) => `+1212${String(2_000_000 + i).padStart(7, '0')}`);
  const perCampaign = Math.ceil(QUEUED / CAMPAIGNS);
  const campaignOf: string[] = [];
  const t0 = performance.now();
  const campaignIds: string[] = [];
  await inParallel(
    Array.from({ length: CAMPAIGNS }, (_, c) => c),
    2,
    async (c) => {
      const mine = phones.slice(c * perCampaign, (c + 1) * perCampaign);
      if (mine.length === 0) return;
      const leads = (from: number) =>
        mine.slice(from, from + LEADS_PER_REQUEST).map((phone) => ({ phone, first_name: 'Pat' }));
      const created = await ok(
        admin.post('/api/leads/campaigns', { firmSlug: slug, agentId, name: `Bench ${c}`, leads: leads(0) }),
        'campaign',
      );
      for (let from = LEADS_PER_REQUEST; from < mine.length; from += LEADS_PER_REQUEST) {
        await ok(admin.post(`/api/leads/campaigns/${created.id}/leads`, { leads: leads(from) }), 'add leads');
      }
      mine.forEach((_, i) => (campaignOf[c * perCampaign + i] = created.id as string));
      campaignIds[c] = created.id as string;
    },
  );
  say(`${CAMPAIGNS} campaigns of ${QUEUED} leads made in ${seconds(performance.now() - t0)}`);
  const t1 = performance.now();
  for (const id of campaignIds) await ok(admin.post(`/api/leads/campaigns/${id}/launch`), 'launch');
  const campaigns = services.queues.campaigns;
  for (;;) {
    const counts = await campaigns.getJobCounts('delayed', 'wait', 'prioritized', 'active');
    if (
      counts.delayed === QUEUED &&
      (counts.wait ?? 0) + (counts.prioritized ?? 0) + (counts.active ?? 0) === 0
    )
      break;
    say(`queueing: ${counts.delayed} of ${QUEUED} calls waiting for the window (load ${loadAverage()})`);
    await sleep(5000);
  }
  const queuedIn = performance.now() - t1;
  say(`${QUEUED} calls queued (each deferred by the gate, its job delayed) in ${seconds(queuedIn)}`);

  // The listed numbers, spread over every campaign.
  const step = QUEUED / LISTED;
  const listedIdx = Array.from({ length: LISTED }, (_, i) => Math.floor(i * step));
  const listed = listedIdx.map((i) => phones[i]!);
  const answeredAt = new Map<string, number>();
  const apiMs: number[] = [];
  for (let i = 0; i < LISTED; i += PER_REQUEST) {
    const part = listed.slice(i, i + PER_REQUEST);
    const sent = Date.now();
    const body = await ok(
      admin.post('/api/compliance/dnc', { firmSlug: slug, phones: part, reason: 'bench' }),
      'dnc',
    );
    const at = Date.now();
    apiMs.push(at - sent);
    if (body.added !== part.length) throw new Error(`dnc: ${JSON.stringify(body)}`);
    for (const phone of part) answeredAt.set(phone, at);
  }

  // Each listed number's block: its call's request-stage decision, read by _id until all are in.
  const decisions = services.mongo.db.collection<DialDecisionDoc>(COLLECTIONS.dialDecisions);
  const blockedAt = new Map<string, number>();
  const waitFrom = Date.now();
  while (blockedAt.size < LISTED) {
    if (Date.now() - waitFrom > 10 * 60_000)
      throw new Error(`only ${blockedAt.size} of ${LISTED} blocked after 10 min`);
    const missing = listedIdx.filter((i) => !blockedAt.has(phones[i]!));
    await inParallel(missing, 32, async (i) => {
      const decision = await decisions.findOne({
        _id: `${campaignCallId(campaignOf[i]!, phones[i]!, 1)}:request`,
      });
      if (decision !== null) {
        if (decision.answer !== 'block' || decision.reason !== 'dnc') {
          throw new Error(`unexpected decision ${JSON.stringify(decision)}`);
        }
        blockedAt.set(phones[i]!, clock.wallTimeOf(decision.at.getTime()));
      }
    });
    if (blockedAt.size < LISTED) await sleep(250);
  }
  const latencies = listed
    .map((phone) => blockedAt.get(phone)! - answeredAt.get(phone)!)
    .sort((a, b) => a - b);
  // The sweep jobs' own counts, once they have finished (the last block is written before the end).
  let sweeps: Awaited<ReturnType<typeof campaigns.getJobs>> = [];
  for (let look = 0; look < 120; look++) {
    sweeps = (await campaigns.getJobs(['completed', 'failed'], 0, 200)).filter((j) => j.name === 'dnc-sweep');
    if (sweeps.length >= Math.ceil(LISTED / PER_REQUEST)) break;
    await sleep(250);
  }
  const stillQueued = await campaigns.getDelayedCount();

  // The window opens: the clock moves into it; the listed numbers' jobs and the others' come due.
  clock.shift(3 * HOUR + 10 * 60_000);
  const others = DRAIN_ALL
    ? phones.filter((_, i) => !listedIdx.includes(i))
    : phones.filter((_, i) => !listedIdx.includes(i)).slice(0, OTHERS);
  const tDrain = performance.now();
  if (DRAIN_ALL) {
    await campaigns.promoteJobs();
  } else {
    const index = new Map(phones.map((p, i) => [p, i]));
    await inParallel([...listed, ...others], 32, async (phone) => {
      const job = await campaigns.getJob(jobId('cc', campaignOf[index.get(phone)!]!, phone, '1'));
      await job?.promote();
    });
  }
  const sim = services.mongo.db.collection<{ to_number: string }>(COLLECTIONS.simulatorCalls);
  const dialledNow = async (): Promise<Set<string>> => {
    const seen = new Set<string>();
    for await (const d of sim.find({}, { projection: { to_number: 1 } })) seen.add(d.to_number);
    return seen;
  };
  let dialled = new Set<string>();
  for (;;) {
    dialled = await dialledNow();
    const counts = await campaigns.getJobCounts('wait', 'prioritized', 'active');
    const othersDialled = others.filter((p) => dialled.has(p)).length;
    if (
      othersDialled === others.length &&
      (counts.wait ?? 0) + (counts.prioritized ?? 0) + (counts.active ?? 0) === 0
    )
      break;
    if (performance.now() - tDrain > 30 * 60_000) throw new Error('the drain did not finish in 30 min');
    say(`drain: ${othersDialled} of ${others.length} others dialled (load ${loadAverage()})`);
    await sleep(5000);
  }
  const drainMs = performance.now() - tDrain;
  // A last look a moment later: a listed number's job still finishing would show now.
  await sleep(2000);
  dialled = await dialledNow();
  const listedDialled = listed.filter((p) => dialled.has(p));
  const calls = services.mongo.db.collection<{ _id: string }>(COLLECTIONS.calls);
  let listedCalls = 0;
  await inParallel(listedIdx, 32, async (i) => {
    if ((await calls.findOne({ _id: campaignCallId(campaignOf[i]!, phones[i]!, 1) })) !== null)
      listedCalls += 1;
  });

  console.log(
    `do-not-call addition against a queue: ${QUEUED} campaign calls queued in ${CAMPAIGNS} campaigns ` +
      `(queued in ${seconds(queuedIn)}), ${LISTED} of their numbers listed in ${Math.ceil(LISTED / PER_REQUEST)} ` +
      `request(s) of ${PER_REQUEST}; load ${loadAverage()}`,
  );
  console.table([
    {
      'API answer ms': apiMs.join('/'),
      'block p50 ms': percentile(latencies, 0.5),
      'block p95 ms': percentile(latencies, 0.95),
      'block p99 ms': percentile(latencies, 0.99),
      'block max ms': latencies[latencies.length - 1],
      blocked: `${blockedAt.size}/${LISTED}`,
      'jobs still delayed then': stillQueued,
    },
  ]);
  for (const job of sweeps) console.log(`sweep job ${job.id}: ${JSON.stringify(job.returnvalue)}`);
  console.table([
    {
      'came due': `${listed.length} listed + ${others.length} others${DRAIN_ALL ? ' (all)' : ''}`,
      'drain s': (drainMs / 1000).toFixed(1),
      'listed dialled (simulator log)': listedDialled.length,
      'listed with a call record': listedCalls,
      'others dialled (simulator log)': `${others.filter((p) => dialled.has(p)).length}/${others.length}`,
      'simulator dials in all': dialled.size,
    },
  ]);
  if (listedDialled.length > 0 || listedCalls > 0) {
    console.error(`FAIL: listed numbers dialled: ${listedDialled.slice(0, 10).join(', ')}`);
    process.exitCode = 1;
  }
}

runScript(main);
