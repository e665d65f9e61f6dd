// `npm run soak`: steady mixed load for SOAK_MINUTES (60) at about a third of the capacity
// measured at the start, sampling every SOAK_SAMPLE_SECONDS (30): web and worker RSS and heap,
// event-loop delay p99, Redis used_memory and key count, MongoDB size per collection, jobs.
// After SOAK_WARMUP_MINUTES (5) it judges: RSS and heap slopes < 1 MB per 10 min, Redis memory
// and keys (apart from scheduled jobs) flat within ±5 % (the memory without client buffers and
// the scheduled keys' share of the key-space tables: bench/soak/sample.ts keptBytes), Redis
// connections flat, event-loop delay p99 < 100 ms, and at
// the end every job done. Writes bench/results/soak/soak.csv, soak.png (and soak.html) and
// prints a verdict per series. Not part of `npm test`.
// Knobs: SOAK_MINUTES, SOAK_WARMUP_MINUTES, SOAK_SAMPLE_SECONDS, SOAK_CALLS_PER_S (skips the
// capacity probe), SOAK_CALIBRATE_CALLS (60), SOAK_OUT (output folder).
// Looking for a leak (the files go to the probe folder the soak prints at the start):
//   SOAK_HEAP_SNAPSHOTS=6,26  the worker writes <pid>-<n>.heapsnapshot after its n-th sample's
//                             full collection (bench/soak/probe.mjs); compare two with
//                             `npx tsx bench/soak/heap-diff.ts a.heapsnapshot b.heapsnapshot`;
//   SOAK_REDIS_KEYS=1         every sample writes redis-kept-<n>.json, the kept keys (neither
//                             scheduled nor in flight) with their MEMORY USAGE; compare two with
//                             `npx tsx bench/soak/redis-diff.ts a.json b.json`.
// The children's NODE_OPTIONS are the soak's own (below): an outer NODE_OPTIONS does not reach them.
// Uses REDIS_URL / MONGODB_URI when set, else starts its own Redis and FerretDB on PostgreSQL
// (a Redis of its own: DBSIZE and used_memory are the soak's alone).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isCluster } from '../core/platform/redis-cluster.js';
import { QUEUE, QUEUE_NAMES } from '../jobs/queues.js';
import { startFakeClio } from '../test/fakes/clio-server.js';
import { startFakeSlack } from '../test/fakes/slack-server.js';
import { startFakeSmtp } from '../test/fakes/smtp-server.js';
import { described, interruption, loadAverage, loop, say } from './lib/measure.js';
import {
  api,
  atExit,
  cleanup,
  createApp,
  deadline,
  makeTenant,
  rand,
  root,
  runtime,
  startStores,
  type App,
} from './lib/stack.js';
import { MixedLoad, type LoadPlan, type Tenant } from './soak/load.js';
import { takeSample, type Sample } from './soak/sample.js';
import {
  ceilingVerdict,
  flatVerdict,
  slopeVerdict,
  verdictLine,
  type Point,
  type Verdict,
} from './soak/verdict.js';
import { renderChart, type ChartSeries } from './soak/chart.js';

/** A positive number from the environment (fractions allowed), else `fallback`. */
function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number (got ${raw})`);
  return n;
}

// An hour: the processes' RSS rises for about half an hour as V8's code pages and heap reach
// their high-water marks (docs/soak.md#memory); judged over 30 minutes, that rise alone came
// near the slope's limit and crossed it twice.
const MINUTES = num('SOAK_MINUTES', 60);
const WARMUP_MINUTES = num('SOAK_WARMUP_MINUTES', Math.min(5, MINUTES / 3));
const SAMPLE_SECONDS = num('SOAK_SAMPLE_SECONDS', 30);
const CALIBRATE_CALLS = num('SOAK_CALIBRATE_CALLS', 60);
const OUT = process.env.SOAK_OUT ?? join(root, 'bench', 'results', 'soak');
const SIM_CALL_MS = 2000;

/** Queues whose delayed jobs are scheduled work (reminders, the maintenance schedules), not backlog. */
const SCHEDULED = new Set<string>([QUEUE.bookings, QUEUE.maintenance]);

/** Nothing left to run: no job waiting or active, no delayed job outside the scheduled queues. */
async function backlog(app: App): Promise<number> {
  let left = 0;
  for (const name of QUEUE_NAMES) {
    const queue = app.queues[name];
    const c = await queue.getJobCounts('waiting', 'active', 'prioritized', 'delayed');
    // A job scheduler (jobs/ with everyMs) always has its next run delayed: that is no backlog.
    const delayed = SCHEDULED.has(name) ? 0 : Math.max(0, c.delayed! - (await queue.getJobSchedulersCount()));
    left += c.waiting! + c.active! + c.prioritized! + delayed;
  }
  return left;
}

async function drain(app: App, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if ((await backlog(app)) === 0) return true;
    await sleep(250);
  }
  return false;
}

async function failedJobs(app: App): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of QUEUE_NAMES) {
    const { failed } = await app.queues[name].getJobCounts('failed');
    if (failed! > 0) out[name] = failed!;
  }
  return out;
}

async function tenant(app: App, base: string, settings: Record<string, unknown>): Promise<Tenant> {
  const bookingSecret = `whsec_${rand(16)}`;
  const t = await makeTenant(app, base, { ...settings, booking_webhook_secret: bookingSecret });
  return { ...t, bookingSecret };
}

/** Calls placed, played, analysed and their effects done per second, in a burst of `n`. */
async function capacity(app: App, base: string, t: Tenant, n: number): Promise<number> {
  const started = performance.now();
  await loop(10, n, (i) =>
    api(base, 'POST', '/api/v2/create-outbound-call', t.key, {
      toNumber: `+1415${String(3_000_001 + i)}`,
      agentId: t.agentId,
      firmSlug: t.slug,
    }),
  );
  if (!(await drain(app, 10 * 60_000))) throw new Error('the capacity probe did not drain in 10 minutes');
  return n / ((performance.now() - started) / 1000);
}

function toCsv(samples: Sample[]): string {
  const columns = [...new Set(samples.flatMap((s) => Object.keys(s)))];
  const cell = (x: number | undefined) =>
    x === undefined || !Number.isFinite(x) ? '' : String(+x.toFixed(3));
  return (
    [columns.join(','), ...samples.map((s) => columns.map((c) => cell(s[c])).join(','))].join('\n') + '\n'
  );
}

async function main(): Promise<void> {
  deadline((MINUTES + 30) * 60_000);
  mkdirSync(OUT, { recursive: true });
  if (runtime() === 'dist') {
    // The processes run as the Procfile runs them: compiled, from this checkout's code.
    say('npm run build');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  say(
    `soak: ${MINUTES} min (${WARMUP_MINUTES} min warm-up), a sample every ${SAMPLE_SECONDS} s; load average ${loadAverage()}`,
  );
  const stores = await startStores();
  const clio = await startFakeClio(`clio_${rand(8)}`);
  const slack = await startFakeSlack();
  const smtp = await startFakeSmtp();
  atExit(async () => {
    await clio.close();
    await slack.close();
    await smtp.stop();
  });
  const probeDir = mkdtempSync(join(tmpdir(), 'soak-probe-'));
  say(`soak: probe folder ${probeDir}`);
  const app = await createApp(stores, 'soak', {
    SIM_CALL_MS: String(SIM_CALL_MS),
    SMTP_URL: smtp.url,
    MAIL_FROM: 'intake@service.test',
    CLIO_BASE_URL: clio.url,
    CLIO_CLIENT_ID: clio.oauth.clientId,
    CLIO_CLIENT_SECRET: clio.oauth.clientSecret,
    // A booking's reminders go to its attendees and the firm: at the soak's rate a firm passes
    // the production guard of 1,000 mails a day within minutes, after which reminders are not
    // sent and the soak would no longer exercise the mail path.
    BOOKING_MAILS_PER_FIRM_PER_DAY: '1000000',
    SOAK_PROBE_DIR: probeDir,
    SOAK_PROBE_MS: String(SAMPLE_SECONDS * 1000),
    // The Procfile's variables and node flags come with each process (bench/lib/stack.ts).
    NODE_OPTIONS: `--expose-gc --import=${join(root, 'bench', 'soak', 'probe.mjs')}`,
    // Heap snapshots are the worker's alone (below), not the web's.
    SOAK_HEAP_SNAPSHOTS: '',
  });
  const web = await app.startWeb();
  const worker = await app.startWorker('worker', {
    SOAK_HEAP_SNAPSHOTS: process.env.SOAK_HEAP_SNAPSHOTS ?? '',
  });
  const common = {
    timezone: 'UTC',
    notification_emails: ['intake@lawfirm.test'],
    slack_webhook_url: slack.webhookUrl(),
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    reminder_offsets_minutes: [2, 1],
  };
  const direct = await tenant(app, web.base, { ...common, max_concurrent_calls: 1000 });

  let callsPerSecond = num('SOAK_CALLS_PER_S', NaN);
  if (!Number.isFinite(callsPerSecond)) {
    const cap = await capacity(app, web.base, direct, CALIBRATE_CALLS);
    callsPerSecond = cap / 3;
    say(
      `soak: capacity ${cap.toFixed(2)} calls/s end to end (load average ${loadAverage()}); load at a third`,
    );
  }
  // A third of capacity in calls: 60 % placed directly, 40 % by the campaigns; the rest in proportion.
  const campaignEverySeconds = 120;
  const plan: LoadPlan = {
    callsPerSecond: 0.6 * callsPerSecond,
    campaignEverySeconds,
    campaignLeads: Math.max(1, Math.round(0.4 * callsPerSecond * campaignEverySeconds)),
    bookingsPerSecond: callsPerSecond / 4,
    importEverySeconds: 60,
    importRows: 200,
    clioConnectEverySeconds: 60,
  };
  // The campaign firm's dial slots: a call holds one for its SIM_CALL_MS and a little more, so
  // with twice the slots the campaigns' rate needs they are half busy on average and still keep
  // up, while each launch's burst (every lead at once) parks on them. With a fixed 4, a campaign
  // rate above ~1.8 calls a second (capacity over ~13.5) could not be carried: the campaigns'
  // backlog grew all hour and the drain at the end neared its limit (2026-12-06: 9.6 minutes
  // of 10 at capacity 15.5).
  const campaignSlots = Math.max(
    4,
    Math.ceil((2 * plan.campaignLeads * SIM_CALL_MS) / (plan.campaignEverySeconds * 1000)),
  );
  const campaignFirm = await tenant(app, web.base, { ...common, max_concurrent_calls: campaignSlots });
  say(`soak: plan ${JSON.stringify({ ...plan, campaignSlots })}`);

  // The soak's own stores are one local Redis: its INFO, DBSIZE and SCAN see the whole data set.
  if (isCluster(app.redis)) throw new Error('the soak samples a single Redis, not a cluster');
  const sources = {
    webBase: web.base,
    webPid: web.pid,
    workerPid: worker.pid,
    probeDir,
    redis: app.redis,
    prefix: app.prefix,
    db: app.db,
    keptKeysDump: process.env.SOAK_REDIS_KEYS === '1',
  };
  const load = new MixedLoad(web.base, app.adminKey, direct, campaignFirm, plan);
  const samples: Sample[] = [];
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  load.start();
  for (let next = 0; elapsed() < MINUTES * 60 && !interruption.interrupted;) {
    if (elapsed() >= next) {
      const s = await takeSample(sources, elapsed());
      samples.push(s);
      next += SAMPLE_SECONDS;
      say(
        `soak ${s.minutes!.toFixed(1)} min: web ${s.web_rss_mb!.toFixed(0)} MB (heap ${s.web_heap_after_gc_mb!.toFixed(1)}), worker ${s.worker_rss_mb!.toFixed(0)} MB (heap ${s.worker_heap_after_gc_mb!.toFixed(1)}), ` +
          `redis ${s.redis_used_mb!.toFixed(1)} MB ${s.redis_keys} keys (${s.jobs_scheduled} scheduled), lag p99 ${s.web_lag_p99_ms!.toFixed(0)}/${s.worker_lag_p99_ms!.toFixed(0)} ms, ` +
          `${s.jobs_completed} jobs done, ${s.jobs_waiting} waiting; load ${loadAverage()}`,
      );
    }
    await sleep(200);
  }
  await load.stop();
  say(`soak: load stopped (${JSON.stringify(load.counts)}); waiting for the backlog`);
  const drained = await drain(app, 10 * 60_000);
  samples.push(await takeSample(sources, elapsed()));
  const campaigns = await Promise.all(
    load.campaignIds.map((id) =>
      api<{ status: string }>(web.base, 'GET', `/api/leads/campaigns/${id}`, campaignFirm.key),
    ),
  );
  const unfinished = campaigns.filter((c) => c.status !== 'completed').length;
  const failed = await failedJobs(app);

  // ---- verdicts ---------------------------------------------------------------------------
  const judged = samples.filter((s) => s.t! >= WARMUP_MINUTES * 60);
  const pts = (k: string): Point[] => judged.map((s) => ({ t: s.t!, y: s[k]! }));
  const verdicts: Verdict[] = [
    slopeVerdict('web_rss_mb', pts('web_rss_mb'), 1),
    slopeVerdict('worker_rss_mb', pts('worker_rss_mb'), 1),
    slopeVerdict('web_heap_after_gc_mb', pts('web_heap_after_gc_mb'), 1),
    slopeVerdict('worker_heap_after_gc_mb', pts('worker_heap_after_gc_mb'), 1),
    flatVerdict('redis_used_kept_mb', pts('redis_used_kept_mb'), 0.05, ' MB'),
    flatVerdict('redis_keys_kept', pts('redis_keys_kept'), 0.05),
    // Client buffers are left out of the kept memory: the connections themselves must not grow.
    flatVerdict('redis_clients', pts('redis_clients'), 0.05),
    flatVerdict('redis_keys_other', pts('redis_keys_other'), 0.05),
    ceilingVerdict('retention_vs_bound', pts('retention_vs_bound'), 1.000001, '× bound'),
    ceilingVerdict('web_lag_p99_ms', pts('web_lag_p99_ms'), 100, 'ms'),
    ceilingVerdict('worker_lag_p99_ms', pts('worker_lag_p99_ms'), 100, 'ms'),
    {
      series: 'jobs',
      ok: drained && unfinished === 0 && Object.keys(failed).length === 0 && load.counts.failures === 0,
      text:
        `${samples.at(-1)!.jobs_completed} completed; backlog ${drained ? 'drained' : 'NOT drained'}; ` +
        `failed jobs ${JSON.stringify(failed)}; campaigns ${campaigns.length - unfinished}/${campaigns.length} completed; ` +
        `${load.counts.failures} requests refused; sent ${JSON.stringify(load.counts)}`,
    },
  ];
  const info: Verdict[] = [
    slopeVerdict('web_heap_mb (before GC)', pts('web_heap_mb'), Infinity),
    slopeVerdict('web_heap_total_mb', pts('web_heap_total_mb'), Infinity),
    slopeVerdict('web_external_mb', pts('web_external_mb'), Infinity),
    slopeVerdict('worker_heap_total_mb', pts('worker_heap_total_mb'), Infinity),
    slopeVerdict('worker_external_mb', pts('worker_external_mb'), Infinity),
    slopeVerdict('worker_array_buffers_mb', pts('worker_array_buffers_mb'), Infinity),
    slopeVerdict('worker_native_mb', pts('worker_native_mb'), Infinity),
    slopeVerdict('worker_new_space_mb', pts('worker_new_space_mb'), Infinity),
    slopeVerdict('worker_old_space_mb', pts('worker_old_space_mb'), Infinity),
    ...(['web', 'worker'] as const).flatMap((proc) =>
      (['code', 'v8', 'malloc'] as const).map((part) =>
        slopeVerdict(`${proc}_rss_${part}_mb`, pts(`${proc}_rss_${part}_mb`), Infinity),
      ),
    ),
    flatVerdict('redis_used_mb (all)', pts('redis_used_mb'), Infinity, ' MB'),
    flatVerdict('redis_scheduled_mb', pts('redis_scheduled_mb'), Infinity, ' MB'),
    flatVerdict('redis_in_flight_mb', pts('redis_in_flight_mb'), Infinity, ' MB'),
    flatVerdict('redis_retained_mb', pts('redis_retained_mb'), Infinity, ' MB'),
    flatVerdict('redis_other_mb', pts('redis_other_mb'), Infinity, ' MB'),
    flatVerdict('redis_clients_mb', pts('redis_clients_mb'), Infinity, ' MB'),
    flatVerdict('redis_scripts_mb', pts('redis_scripts_mb'), Infinity, ' MB'),
    flatVerdict('redis_overhead_mb', pts('redis_overhead_mb'), Infinity, ' MB'),
    flatVerdict('redis_key_tables_mb', pts('redis_key_tables_mb'), Infinity, ' MB'),
    flatVerdict('jobs_retained', pts('jobs_retained'), Infinity),
    flatVerdict('redis_booking_records', pts('redis_booking_records'), Infinity),
    ...Object.keys(samples.at(-1)!)
      .filter((k) => k.startsWith('mongo_') && k.endsWith('_kb'))
      .map((k) => {
        const p = pts(k);
        const per10 =
          (((p.at(-1)?.y ?? 0) - (p[0]?.y ?? 0)) / Math.max(1, (p.at(-1)?.t ?? 0) - (p[0]?.t ?? 0))) * 600;
        return {
          series: k,
          ok: true,
          text: `${(p.at(-1)?.y ?? NaN).toFixed(0)} kB at the end, ${per10.toFixed(0)} kB/10 min`,
        };
      }),
  ];

  const csvPath = join(OUT, 'soak.csv');
  writeFileSync(csvPath, toCsv(samples));
  const stateOf = (name: string): ChartSeries['state'] => {
    const v = verdicts.find((x) => x.series === name);
    return v === undefined ? 'info' : v.ok ? 'pass' : 'fail';
  };
  const charted: Array<[string, string]> = [
    ['web_rss_mb', 'MB'],
    ['worker_rss_mb', 'MB'],
    ['web_heap_after_gc_mb', 'MB'],
    ['worker_heap_after_gc_mb', 'MB'],
    ['web_heap_mb', 'MB'],
    ['redis_used_mb', 'MB'],
    ['redis_used_kept_mb', 'MB'],
    ['redis_keys_kept', 'keys'],
    ['redis_clients', 'connections'],
    ['redis_keys_other', 'keys'],
    ['retention_vs_bound', '× bound'],
    ['jobs_retained', 'jobs'],
    ['redis_booking_records', 'keys'],
    ['jobs_scheduled', 'jobs'],
    ['web_lag_p99_ms', 'ms'],
    ['worker_lag_p99_ms', 'ms'],
    ['jobs_completed', 'jobs'],
    ['mongo_total_mb', 'MB'],
    ['mongo_idempotency_keys_kb', 'kB'],
    ['mongo_clio_oauth_states_kb', 'kB'],
    ['load1', 'load average'],
  ];
  await renderChart(
    `npm run soak — ${MINUTES} min, ${plan.callsPerSecond.toFixed(2)} direct calls/s + campaigns, ${new Date().toISOString()}`,
    charted.map(([k, unit]) => ({
      title: k,
      unit,
      points: samples.map((s) => ({ x: s.t! / 60, y: s[k] ?? NaN })),
      state: stateOf(k),
      warmupMinutes: WARMUP_MINUTES,
    })),
    { html: join(OUT, 'soak.html'), png: join(OUT, 'soak.png') },
  );
  const lines = [
    `soak: ${MINUTES} min, warm-up ${WARMUP_MINUTES} min, ${samples.length} samples; load average at the end ${loadAverage()}`,
    ...verdicts.map(verdictLine),
    'information (not judged):',
    ...info.map((v) => `      ${v.series.padEnd(28)} ${v.text}`),
    `wrote ${csvPath}, ${join(OUT, 'soak.png')}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeFileSync(join(OUT, 'verdicts.txt'), `${lines.join('\n')}\n`);
  await app.close();
  process.exitCode = verdicts.every((v) => v.ok) ? 0 : 1;
}

main()
  .then(() => cleanup())
  .then(() => process.exit(process.exitCode ?? 0))
  .catch(async (err: unknown) => {
    say(`soak failed: ${described(err)}`);
    await cleanup();
    process.exit(1);
  });
