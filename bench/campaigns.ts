// Campaign launch and fan-out at scale.
//   npx tsx bench/campaigns.ts      (BENCH_LEADS=50000, BENCH_SMALL_REPS=5, BENCH_LARGE_REPS=3)
// Not part of `npm test`. Uses REDIS_URL / MONGODB_URI when set, else starts the local Redis and
// FerretDB (on PostgreSQL) as `npm test` does. The web app runs in this process; the worker is
// the real worker entry (workers/main.ts) in a child process, consuming the campaigns queue only
// with one job at a time, so the fan-out job runs alone; the firm's calling window is closed,
// so no call is dialled and only the fan-out is measured.
//   (a) launch response time (POST .../launch over HTTP) at 100 and at BENCH_LEADS leads: the
//       medians and their ratio (the launch must not grow with the leads: ≤ 2).
//   (b) the fan-out of one BENCH_LEADS-lead campaign (one streaming cursor, addBulk per chunk,
//       a checkpoint per chunk): jobs/s, against a bare Queue.addBulk of as many jobs of the
//       same shape (ids, priorities, payload) in chunks of the same size on the same Redis.
//   (c) the worker's RSS as that fan-out starts, its peak during it and at each quarter of it
//       (BENCH_WORKER_HEAP_MB=40 caps the worker's V8 old space, to show the fan-out streams).
// Everything it made is dropped at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices, type Services } from '../core/wiring/services.js';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { COLLECTIONS } from '../core/platform/db/collections.js';
import { startWeb, type Web } from '../api/web.js';
import { jobId } from '../jobs/define.js';
import { startLocalServices, type LocalServices } from '../scripts/local/services.js';

const bounded = (name: string, fallback: number, max: number): number => {
  const n = Number(process.env[name] ?? fallback);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback;
};
const LARGE = bounded('BENCH_LEADS', 50_000, 200_000);
const SMALL = 100;
const SMALL_REPS = bounded('BENCH_SMALL_REPS', 5, 50);
const LARGE_REPS = bounded('BENCH_LARGE_REPS', 3, 10);
const PER_REQUEST = 5000;
const CHUNK = 500; // CAMPAIGN_FANOUT_CHUNK's default
const DEADLINE_MS = 30 * 60_000;

const say = (line: string): void => void process.stderr.write(`[campaigns] ${line}\n`);
const rand = (n = 4): string => randomBytes(n).toString('hex');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- cleanup, whatever way the run ends --------------------------------------------------

const cleanups: Array<() => Promise<unknown>> = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  })();
  return cleaning;
}
const deadline = setTimeout(() => {
  say(`gave up after ${DEADLINE_MS / 1000} s`);
  void cleanup().finally(() => process.exit(2));
}, DEADLINE_MS);
deadline.unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().finally(() => process.exit(130)));
}

/** Resident set size of a process, in MiB (Linux /proc). */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** The i-th distinct valid US number of a run (212-2xx-xxxx). */
const phone = (i: number): string =>
  `+1212${200 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`;

async function main(): Promise<void> {
  const local: LocalServices = await startLocalServices(
    { redisUrl: process.env.REDIS_URL, mongodbUri: process.env.MONGODB_URI },
    say,
  );
  cleanups.push(() => local.stop());
  const mongoUri = new URL(local.mongodbUri);
  mongoUri.pathname = `/campaigns_${rand()}`;
  const adminKey = `adm_${rand(16)}`;
  const env: Record<string, string> = {
    REDIS_URL: local.redisUrl,
    MONGODB_URI: mongoUri.toString(),
    ADMIN_API_KEY: adminKey,
    SESSION_SECRET: rand(24),
    PORT: '0',
    LOG_LEVEL: 'warn',
    QUEUE_PREFIX: `cbench${rand()}`,
    VOICE_PROVIDER: 'simulator',
    RATE_LIMIT_PER_MINUTE: '1000000',
    CAMPAIGN_FANOUT_CHUNK: String(CHUNK),
  };
  const config = loadConfig(env);
  const services: Services = createServices(config, createLogger(config.logLevel, 'bench'), 'producer');
  const db = services.mongo.db;
  const started: { web?: Web; worker?: ChildProcess } = {};
  cleanups.push(async () => {
    started.worker?.kill('SIGKILL');
    await Promise.all(
      Object.values(services.queues).map((q) => q.obliterate({ force: true }).catch(() => {})),
    );
    await db.dropDatabase().catch(() => {});
    if (started.web) await started.web.stop();
    else await services.close();
  });
  await ensureIndexes(db);
  const web = await startWeb(services, '127.0.0.1');
  started.web = web;
  const base = `http://127.0.0.1:${web.port}`;
  const post = async <T>(path: string, token: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const parsed = (await res.json()) as T;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(parsed)}`);
    return parsed;
  };

  // A firm whose calling window is closed now (a one-hour window twelve hours away, in UTC):
  // campaign calls wait for it, so nothing is dialled while the fan-out is measured.
  const away = new Date(Date.now() + 12 * 3600_000).toISOString().slice(11, 13);
  const slug = `bench-${rand()}`;
  await post('/api/firms', adminKey, {
    slug,
    name: 'Campaign bench firm',
    settings: {
      timezone: 'UTC',
      max_concurrent_calls: 1000,
      calling_window: { start: `${away}:00`, end: `${away}:59`, days: [1, 2, 3, 4, 5, 6, 7] },
    },
  });
  const { key } = await post<{ key: string }>('/api/auth/api-keys', adminKey, {
    firmSlug: slug,
    name: 'bench',
  });
  const { agent_id: agentId } = await post<{ agent_id: string }>('/api/v2/create-agent', key, {
    firmSlug: slug,
    agent_name: 'Bench agent',
    voice_id: 'sim-en-us-ava',
  });

  /** A draft campaign of `size` distinct callable leads, added 5,000 per request. */
  let made = 0;
  const makeCampaign = async (size: number): Promise<string> => {
    const t = performance.now();
    const leads = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ phone: phone(from + i), first_name: `Lead ${from + i}` }));
    const first = Math.min(size, PER_REQUEST);
    const { id } = await post<{ id: string }>('/api/leads/campaigns', key, {
      firmSlug: slug,
      name: `bench ${size} #${++made}`,
      agentId,
      leads: leads(0, first),
    });
    for (let from = first; from < size; from += PER_REQUEST) {
      await post(`/api/leads/campaigns/${id}/leads`, key, {
        leads: leads(from, Math.min(PER_REQUEST, size - from)),
      });
    }
    if (size >= PER_REQUEST)
      say(`made a ${size}-lead campaign in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    return id;
  };

  // (a) launch response time. No worker runs yet: the launches only enqueue their fan-outs.
  const launchMs = async (id: string, expected: number): Promise<number> => {
    const t = performance.now();
    const res = await post<{ calls_queued: number }>(`/api/leads/campaigns/${id}/launch`, key);
    const ms = performance.now() - t;
    if (res.calls_queued !== expected)
      throw new Error(`calls_queued ${res.calls_queued}, expected ${expected}`);
    return ms;
  };
  // Warm-up: the first requests of a process pay for compiling and connecting.
  for (let i = 0; i < 3; i++) await launchMs(await makeCampaign(10), 10);
  const small: number[] = [];
  const large: number[] = [];
  const largeIds: string[] = [];
  for (let i = 0; i < LARGE_REPS; i++) largeIds.push(await makeCampaign(LARGE));
  const smallIds: string[] = [];
  for (let i = 0; i < SMALL_REPS; i++) smallIds.push(await makeCampaign(SMALL));
  // Interleaved, so that a drift of the machine touches both sizes alike.
  for (let i = 0; i < Math.max(SMALL_REPS, LARGE_REPS); i++) {
    if (i < SMALL_REPS) small.push(await launchMs(smallIds[i]!, SMALL));
    if (i < LARGE_REPS) large.push(await launchMs(largeIds[i]!, LARGE));
  }
  // Only the first large campaign fans out below; the others are cancelled before any worker runs.
  for (const id of [...smallIds, ...largeIds.slice(1)]) await post(`/api/leads/campaigns/${id}/cancel`, key);
  const measured = largeIds[0]!;

  // (b) + (c) the fan-out in the real worker process, one job at a time.
  // BENCH_WORKER_HEAP_MB caps the worker's V8 old space: a fan-out that held on to what it read
  // would then run out of memory, one that streams stays flat (V8 otherwise lets the heap grow
  // well past what is live before it collects, which the uncapped RSS shows).
  const heapCap =
    process.env.BENCH_WORKER_HEAP_MB === undefined
      ? []
      : [`--max-old-space-size=${bounded('BENCH_WORKER_HEAP_MB', 64, 4096)}`];
  const worker = spawn(process.execPath, [...heapCap, '--import', 'tsx', 'workers/main.ts'], {
    env: { ...process.env, ...env, WORKER_QUEUES: 'campaigns', WORKER_CONCURRENCY: '1' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  started.worker = worker;
  const pid = worker.pid!;
  const fanoutJob = jobId('fanout', measured);
  // RSS when the measured fan-out starts (the worker has loaded, connected and fanned out the
  // warm-up campaigns), its peak during it, and at each quarter of it (by its checkpoint): flat
  // if memory does not grow with the leads.
  let idleRss = NaN;
  let peakRss = 0;
  const sampler = setInterval(() => {
    try {
      if (!Number.isNaN(idleRss)) peakRss = Math.max(peakRss, rssMiB(pid));
    } catch {
      // The process ended.
    }
  }, 20);
  let fanout: { processedOn?: number; finishedOn?: number; returnvalue?: unknown } | undefined;
  const byProgress: string[] = [];
  let nextQuarter = 1;
  for (;;) {
    const job = await services.queues.campaigns.getJob(fanoutJob);
    if (Number.isNaN(idleRss) && job?.processedOn !== undefined) {
      idleRss = rssMiB(pid);
      peakRss = idleRss;
    }
    if (job?.finishedOn !== undefined) {
      fanout = job;
      break;
    }
    if (job?.failedReason) throw new Error(`fan-out failed: ${job.failedReason}`);
    const progress = await db.collection(COLLECTIONS.campaignFanouts).findOne({ _id: measured as never });
    const added = Number(progress?.added ?? 0);
    while (nextQuarter <= 3 && added >= (LARGE * nextQuarter) / 4) {
      byProgress.push(`${nextQuarter * 25}%: ${rssMiB(pid).toFixed(0)} MiB`);
      nextQuarter += 1;
    }
    await sleep(10);
  }
  clearInterval(sampler);
  worker.kill('SIGTERM');
  const fanoutSeconds = (fanout.finishedOn! - fanout.processedOn!) / 1000;
  const checkpoint = await db.collection(COLLECTIONS.campaignFanouts).findOne({ _id: measured as never });
  if (checkpoint?.added !== LARGE) throw new Error(`the fan-out added ${String(checkpoint?.added)} jobs`);

  // The baseline: a bare addBulk of as many jobs of the same shape, same chunks, same Redis.
  const bare = new Queue(`bare-addbulk-${rand()}`, {
    connection: services.redis,
    prefix: config.queuePrefix,
  });
  cleanups.push(() => bare.obliterate({ force: true }).then(() => bare.close()));
  const t = performance.now();
  for (let from = 0; from < LARGE; from += CHUNK) {
    await bare.addBulk(
      Array.from({ length: Math.min(CHUNK, LARGE - from) }, (_, i) => {
        const data = { campaignId: measured, firm: slug, phone: phone(from + i), attempt: 1 };
        return {
          name: 'campaign-call',
          data,
          opts: { jobId: jobId('cc', measured, data.phone, '1'), priority: from + i + 1 },
        };
      }),
    );
  }
  const bareSeconds = (performance.now() - t) / 1000;

  const lines = [
    `campaign launch and fan-out, ${LARGE} leads (FerretDB ${process.env.MONGODB_URI ? 'or MongoDB given' : 'on PostgreSQL, local'}; Redis local)`,
    `(a) launch response, median of ${SMALL_REPS} at ${SMALL} leads: ${median(small).toFixed(1)} ms ` +
      `(all: ${small.map((x) => x.toFixed(1)).join(', ')})`,
    `    launch response, median of ${LARGE_REPS} at ${LARGE} leads: ${median(large).toFixed(1)} ms ` +
      `(all: ${large.map((x) => x.toFixed(1)).join(', ')})`,
    `    ratio ${LARGE}/${SMALL}: ${(median(large) / median(small)).toFixed(2)} (must stay ≤ 2)`,
    `(b) fan-out of ${LARGE} jobs in the worker: ${fanoutSeconds.toFixed(2)} s, ${(LARGE / fanoutSeconds).toFixed(0)} jobs/s; ` +
      `bare addBulk of ${LARGE} jobs: ${bareSeconds.toFixed(2)} s, ${(LARGE / bareSeconds).toFixed(0)} jobs/s; ` +
      `fan-out / bare: ${(bareSeconds / fanoutSeconds).toFixed(2)} of the bare rate`,
    `(c) worker RSS${heapCap.length > 0 ? ` (${heapCap[0]})` : ''}: ${idleRss.toFixed(0)} MiB as the fan-out started, ${peakRss.toFixed(0)} MiB peak during it (+${(peakRss - idleRss).toFixed(0)} MiB); ` +
      `as it went: ${byProgress.join(', ') || 'too fast to sample'}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err: unknown) => {
    say(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exit(1);
  });
