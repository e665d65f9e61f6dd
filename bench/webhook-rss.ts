// The web process's memory while large call webhooks arrive at once
// (docs/webhooks.md#large-bodies):
//   npx tsx bench/webhook-rss.ts        (BENCH_DELIVERIES=20, BENCH_MINUTES=120, BENCH_BIG=4,
//                                        BENCH_WEB_HEAP_MIB=0: the web's old-space limit, 0 default)
// The web runs as a child process as `npm start` runs it (BENCH_RUNTIME=dist: the compiled code,
// after `npm run build`; default here tsx). No workers: the deliveries are read, verified, reduced
// to their snapshot and enqueued, which is all the web does with them. Rounds:
//   (a) BENCH_DELIVERIES signed call_analyzed bodies of a BENCH_MINUTES call (120: about 3 MB
//       each, word-level transcript_object and all), all sent at once; then the same again;
//   (b) BENCH_BIG bodies of 30 MiB at once: more than a firm's 32 MiB share of the budget admits together,
//       so they are read one after another (none may fail: each waits under the 5 s limit).
// Prints VmRSS before and VmHWM/peak VmRSS (sampled every 10 ms from /proc/<pid>/status) during
// each round, the size of the largest job enqueued, and a verdict: every delivery 200, peak under
// 600 MB. Uses REDIS_URL / MONGODB_URI when set, else starts the local Redis and FerretDB.
import { readFileSync } from 'node:fs';
import { signRetellWebhook } from '../core/integrations/voice/webhook-signature.js';
import { longCallAnalyzed } from '../test/calls/long-call-fixture.js';
import { described, knob, loadAverage, RssSampler, say } from './lib/measure.js';
import { cleanup, createApp, deadline, makeTenant, rand, startStores } from './lib/stack.js';

process.env.BENCH_RUNTIME ??= 'tsx';
const DELIVERIES = knob('BENCH_DELIVERIES', 20, 200);
const MINUTES = knob('BENCH_MINUTES', 120, 600);
const BIG = knob('BENCH_BIG', 4, 20);
const PEAK_LIMIT_MIB = 600;
/** BENCH_WEB_HEAP_MIB: the web's --max-old-space-size (0: Node's default), to show it fits in less. */
const HEAP_MIB = knob('BENCH_WEB_HEAP_MIB', 0, 4096);
const SECRET = `whsec_${rand(12)}`;

/** VmRSS and VmHWM (the peak since the process started) in MiB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1]) / 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

const mib = (n: number): string => `${n.toFixed(0)} MiB`;

async function main(): Promise<void> {
  deadline(10 * 60_000);
  const stores = await startStores();
  const app = await createApp(
    stores,
    'webhook-rss',
    HEAP_MIB > 0
      ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${HEAP_MIB}`.trim() }
      : {},
  );
  say(`web heap limit: ${HEAP_MIB > 0 ? mib(HEAP_MIB) : "Node's default"}`);
  const web = await app.startWeb();
  const tenant = await makeTenant(app, web.base, { voice_webhook_secret: SECRET });
  const post = (raw: string): Promise<number> =>
    fetch(`${web.base}/api/v2/${tenant.slug}/webhook`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
      body: raw,
    }).then(async (res) => {
      await res.arrayBuffer();
      return res.status;
    });

  const round = async (label: string, bodies: string[]): Promise<{ ok: boolean; peak: number }> => {
    const before = memory(web.pid);
    const sampler = new RssSampler(web.pid, 10).start();
    const started = Date.now();
    const statuses = await Promise.all(bodies.map(post));
    const ms = Date.now() - started;
    sampler.stop();
    const after = memory(web.pid);
    const ok = statuses.every((s) => s === 200);
    const size = Buffer.byteLength(bodies[0]!) / 1e6;
    say(
      `${label}: ${bodies.length} × ${size.toFixed(1)} MB at once → ${statuses.filter((s) => s === 200).length} × 200` +
        `${ok ? '' : ` (others: ${statuses.filter((s) => s !== 200).join(',')})`} in ${ms} ms`,
    );
    say(
      `  web VmRSS before ${mib(before.rss)} (VmHWM ${mib(before.hwm)}); peak VmRSS sampled ${mib(sampler.peak)}, ` +
        `VmHWM after ${mib(after.hwm)}; VmRSS after ${mib(after.rss)}`,
    );
    return { ok, peak: Math.max(sampler.peak, after.hwm) };
  };

  // Warm up: the first delivery compiles the route's code paths and fills the pools.
  const one = (minutes: number): string =>
    JSON.stringify(longCallAnalyzed({ providerCallId: `call_${rand(12)}`, minutes }));
  if ((await post(one(MINUTES))) !== 200) throw new Error('the warm-up delivery was refused');
  await new Promise((resolve) => setTimeout(resolve, 1000));

  const bodies = Array.from({ length: DELIVERIES }, () => one(MINUTES));
  const a = await round('(a) long calls', bodies);
  // The same again: a process that keeps nothing of a delivery does not grow round after round.
  const again = Array.from({ length: DELIVERIES }, () => one(MINUTES));
  const a2 = await round('(a) again', again);

  const base = longCallAnalyzed({ providerCallId: 'x', minutes: 1 });
  const big = Array.from({ length: BIG }, () =>
    JSON.stringify({
      ...base,
      call: { ...base.call, call_id: `call_${rand(12)}` },
      padding: 'x'.repeat(30 * 2 ** 20),
    }),
  );
  const b = await round('(b) 30 MiB bodies', big);

  const jobs = await app.queues['call-events'].getJobs(['waiting', 'active', 'delayed']);
  const largest = Math.max(...jobs.map((j) => JSON.stringify(j.data).length));
  say(`jobs enqueued: ${jobs.length}; the largest job's data: ${(largest / 1000).toFixed(0)} kB of JSON`);
  const peak = Math.max(a.peak, a2.peak, b.peak);
  const verdict = a.ok && a2.ok && b.ok && peak < PEAK_LIMIT_MIB;
  say(
    `verdict: ${verdict ? 'PASS' : 'FAIL'} (every delivery 200: ${a.ok && a2.ok && b.ok}; peak ${mib(peak)} < ${PEAK_LIMIT_MIB} MiB: ${peak < PEAK_LIMIT_MIB}); load average ${loadAverage()}`,
  );
  process.exitCode = verdict ? 0 : 1;
}

main()
  .catch((error: unknown) => {
    say(`failed: ${described(error)}`);
    process.exitCode = 2;
  })
  .finally(() => cleanup());
