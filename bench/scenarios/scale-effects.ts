// Scale-out where the workers are the bound, as in production: the call_analyzed pipeline
// (call-event → analyze-call → lead, crm, email, team_chat) against local Clio, Slack and SMTP
// servers that answer after BENCH_EFFECT_LATENCY_MS (150–300 ms, uniform), with a fixed
// WORKER_CONCURRENCY (BENCH_EFFECT_CONCURRENCY, 3) in every worker process.
// For 1, 2 and 4 worker processes (WORKER_QUEUES=call-events,call-effects), each time:
//   BENCH_EFFECT_DELIVERIES (600) signed call_analyzed deliveries, each a new caller (so each
//   makes its lead, Clio contact and matter, mail and Slack post), are posted to the web while
//   both queues are paused; the workers start; the queues resume; the clock runs until both
//   queues are empty. Effects completed per second = effects recorded `done` ÷ that time.
// Twice: deliveries spread over BENCH_EFFECT_FIRMS (8) firms, and all to one firm (a per-firm
// lock or hot spot would show there). Ratios: N workers ÷ 1 worker, same run, over
// BENCH_EFFECT_ROUNDS (1) rounds.
// On a Redis Cluster (`npm run bench -- --redis=cluster --only=scale-effects`) each run also
// prints which master holds each queue's slot and the hot keys', and the commands each master
// served (INFO commandstats of every master, the bench's own polls of the queues taken out):
// how the load spreads over the masters.
// Why 3 a process: each effect costs the whole stack 30–37 ms of CPU (the worker ~10 ms,
// FerretDB ~16, PostgreSQL ~7, measured at 10 a process), so this 2-core machine completes at most
// about 60 effects a second whatever the number of workers. At 10 a process one worker already
// does 27/s and four would need more than the two cores: the ratio would measure the machine.
// At 3 a process four workers ask for about 35/s, within it, and the workers' slots waiting on the
// providers stay the bound, as on a production deployment whose stores run elsewhere.
import { createHmac, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { QUEUE } from '../../jobs/queues.js';
import { CALL_EFFECTS } from '../../jobs/call-analysis.js';
import { startFakeClio, type FakeClio } from '../../test/fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../../test/fakes/slack-server.js';
import { startFakeSmtp, type FakeSmtp } from '../../test/fakes/smtp-server.js';
import { atExit, createApp, makeTenant, rand, type App, type Proc } from '../lib/stack.js';
import { commandStatsByMaster, delta, perMaster, subtract } from '../lib/redis-stats.js';
import { masters } from '../../core/platform/redis-cluster.js';
import { checkInterrupted, knob, loadAverage, loop, say, StackCpu } from '../lib/measure.js';
import { mongoCounters } from '../lib/ops.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';

const DELIVERIES = knob('BENCH_EFFECT_DELIVERIES', 600, 50_000);
const CONCURRENCY = knob('BENCH_EFFECT_CONCURRENCY', 3, 500);
const FIRMS = knob('BENCH_EFFECT_FIRMS', 8, 100);
const WORKERS = [1, 2, 4];
// One round per `npm run bench` by default (a round is six drains of every delivery's effects).
const ROUNDS = knob('BENCH_EFFECT_ROUNDS', 1, 5);

function latency(): { minMs: number; maxMs: number } {
  const raw = process.env.BENCH_EFFECT_LATENCY_MS ?? '150-300';
  const m = /^(\d+)-(\d+)$/.exec(raw);
  if (m === null || Number(m[1]) > Number(m[2]))
    throw new Error(`BENCH_EFFECT_LATENCY_MS: min-max (got ${raw})`);
  return { minMs: Number(m[1]), maxMs: Number(m[2]) };
}

/** A call_analyzed delivery as Retell sends it, from caller `n` (their own name, phone, email). */
function callAnalyzed(n: number): unknown {
  const start = Date.now() - 200_000;
  const phone = `+1415${String(2_000_000 + (n % 8_000_000)).padStart(7, '0')}`;
  const email = `caller${n}.${rand(2)}@example.com`;
  const name = `Caller${n} Lee`;
  const lines = [
    'Agent: Thank you for calling. May I have your full name?',
    `User: ${name}.`,
    'Agent: What number can we reach you on?',
    `User: ${phone}.`,
    'Agent: And your email address?',
    `User: ${email}`,
    'Agent: Briefly, what happened?',
    'User: I was rear-ended at a red light last week and my neck still hurts.',
  ];
  return {
    event: 'call_analyzed',
    call: {
      call_type: 'phone_call',
      call_id: `effects_${randomBytes(6).toString('hex')}_${n}`,
      agent_id: 'agent_bench',
      agent_version: 1,
      call_status: 'ended',
      direction: 'inbound',
      from_number: phone,
      to_number: '+14155550100',
      start_timestamp: start,
      end_timestamp: start + 185_000,
      duration_ms: 185_000,
      disconnection_reason: 'user_hangup',
      transcript: `${lines.join('\n')}\n`,
      transcript_object: lines.map((l) => ({ role: l.startsWith('Agent') ? 'agent' : 'user', content: l })),
      metadata: {},
      retell_llm_dynamic_variables: {},
      call_analysis: {
        call_summary: `${name} was rear-ended last week and has neck pain; wants a callback.`,
        user_sentiment: 'Negative',
        call_successful: true,
        in_voicemail: false,
        custom_analysis_data: {
          name,
          phone_number: phone,
          email,
          case_type: 'Personal Injury',
          urgency: 'normal',
        },
      },
    },
  };
}

interface Firm {
  slug: string;
  secret: string;
}

interface Fakes {
  clio: FakeClio;
  slack: FakeSlack;
  smtp: FakeSmtp;
}

async function post(base: string, firm: Firm, n: number): Promise<void> {
  const raw = JSON.stringify(callAnalyzed(n));
  const ts = Date.now();
  const d = createHmac('sha256', firm.secret)
    .update(raw + ts)
    .digest('hex');
  const res = await fetch(`${base}/api/v2/${firm.slug}/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-retell-signature': `v=${ts},d=${d}` },
    body: raw,
  });
  await res.arrayBuffer();
  if (res.status !== 200 && res.status !== 204) throw new Error(`webhook: ${res.status}`);
}

/** Jobs left to run (waiting, delayed or active) in both queues: one look (the bench's own commands). */
async function jobsLeft(app: App): Promise<number> {
  let left = 0;
  for (const q of [app.queues[QUEUE.callEvents], app.queues[QUEUE.callEffects]]) {
    const c = await q.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'waiting-children');
    left += Object.values(c).reduce((a, b) => a + b, 0);
  }
  return left;
}

/** Waits until neither queue has a job left to run; resolves to the looks it took. */
async function drained(app: App, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  let told = Date.now();
  for (let looks = 1; ; looks++) {
    checkInterrupted();
    const left = await jobsLeft(app);
    if (left === 0) return looks;
    if (Date.now() > until)
      throw new Error(`scale-effects: ${left} jobs still queued after ${timeoutMs / 1000} s`);
    if (Date.now() - told > 15_000) {
      told = Date.now();
      say(`scale-effects: ${left} jobs left`);
    }
    await sleep(100);
  }
}

/** One measured run: `deliveries` posted while paused, then `workers` processes drain them. */
async function runOnce(
  app: App,
  base: string,
  firms: Firm[],
  workers: number,
  label: string,
): Promise<{ rate: number; done: number; seconds: number; cpu: string; masters: string }> {
  const events = app.queues[QUEUE.callEvents];
  const effects = app.queues[QUEUE.callEffects];
  await events.pause();
  await effects.pause();
  const before = await countDone(app);
  const mongoBefore = await mongoCommands(app);
  await loop(20, DELIVERIES, (i) => post(base, firms[i % firms.length]!, i));
  const procs: Proc[] = [];
  for (let w = 1; w <= workers; w++) {
    procs.push(
      await app.startWorker(`${label}-w${w}`, {
        WORKER_QUEUES: `${QUEUE.callEvents},${QUEUE.callEffects}`,
        WORKER_CONCURRENCY: String(CONCURRENCY),
      }),
    );
  }
  const cpu = new StackCpu(new Map(procs.map((p) => [p.pid, p.name.replace(/.*-(w\d)$/, 'worker $1')])));
  const statsBefore = await commandStatsByMaster(app.redis);
  const started = performance.now();
  await events.resume();
  await effects.resume();
  const looks = await drained(app, 30 * 60_000);
  const seconds = (performance.now() - started) / 1000;
  const cpuLine = cpu.read();
  const statsAfter = await commandStatsByMaster(app.redis);
  const mongoAfter = await mongoCommands(app);
  const timing = await jobTimes(app);
  for (const p of procs) await p.stop();
  // What one look at the queues costs each master, with the workers gone: the polls taken out.
  const idleBefore = await commandStatsByMaster(app.redis);
  await jobsLeft(app);
  const idleAfter = await commandStatsByMaster(app.redis);
  const served = subtract(delta(statsBefore, statsAfter), delta(idleBefore, idleAfter), looks);
  const sets = [...served.values()].reduce((n, counts) => n + (counts.get('set') ?? 0), 0);
  const done = (await countDone(app)) - before;
  const expected = DELIVERIES * CALL_EFFECTS.length;
  if (done !== expected)
    say(`scale-effects ${label}: ${done} of ${expected} effects done (see the fakes' errors)`);
  const perCall = (sets / DELIVERIES).toFixed(1);
  return {
    rate: done / seconds,
    done,
    seconds,
    // Redis SET: the record locks' SET NX, one per attempt, so the count per call grows when
    // writers of one call wait for each other (jobs use no other SET).
    cpu: `${cpuLine}; ${timing}; ${perCall} lock attempts per call`,
    masters: `${perMaster(served, DELIVERIES, seconds)}; ${mongoPerCall(mongoBefore, mongoAfter, DELIVERIES)}`,
  };
}

/**
 * MongoDB commands served so far, by name (serverStatus metrics.commands, which FerretDB keeps
 * too), without the drivers' own handshakes and heartbeats.
 */
async function mongoCommands(app: App): Promise<Map<string, number>> {
  return new Map(Object.entries(await mongoCounters(app.mongo)));
}

function mongoPerCall(before: Map<string, number>, after: Map<string, number>, calls: number): string {
  const per = [...after]
    .map(([name, n]): [string, number] => [name, (n - (before.get(name) ?? 0)) / calls])
    .filter(([, n]) => n >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  const total = per.reduce((n, [, c]) => n + c, 0);
  return `MongoDB commands per call: ${total.toFixed(1)} (${per.map(([k, n]) => `${k} ${n.toFixed(1)}`).join(', ')})`;
}

/**
 * Where the hot keys of this app live on a cluster: the hash slot (CLUSTER KEYSLOT) and master
 * of each queue's keys and of the keys one call's effects touch. Empty on a single node.
 */
async function slotMap(app: App, firm: string): Promise<string> {
  if (!app.redis.isCluster) return '';
  const node = masters(app.redis)[0]!;
  const ranges = await node.cluster('SLOTS');
  const owner = (slot: number): string => {
    const r = ranges.find(([from, to]) => slot >= from && slot <= to);
    return r?.[2] === undefined ? '?' : `${r[2][0]}:${r[2][1]}`;
  };
  const keys: Array<[string, string]> = [
    ...Object.values(QUEUE).map((q): [string, string] => [`queue ${q}`, `${app.keys.queuePrefix(q)}:wait`]),
    ['a call lock', app.keys.callLock(firm, 'call_0001')],
    ['another call lock', app.keys.callLock(firm, 'call_0002')],
    ['the firm dial slots', app.keys.dialSlots(firm)],
    ['the firm call list', app.keys.callList(firm)],
    ['the read-cache epoch', app.keys.readCacheEpoch()],
    ['the firm webhook rate limit', app.keys.rateLimitCounts('w', firm)],
  ];
  const out: string[] = [];
  for (const [what, key] of keys) {
    const slot = Number(await node.cluster('KEYSLOT', key));
    out.push(`${what} ${key} → slot ${slot} on ${owner(slot)}`);
  }
  return out.join('\n  ');
}

/**
 * How long the last completed jobs of each kind ran (BullMQ's processedOn → finishedOn, medians):
 * with the providers' latency fixed, a job that runs longer with more workers waits on something
 * they share.
 */
async function jobTimes(app: App): Promise<string> {
  const kinds = new Map<string, number[]>();
  for (const q of [app.queues[QUEUE.callEvents], app.queues[QUEUE.callEffects]]) {
    for (const job of await q.getJobs(['completed'], 0, 999)) {
      const data = job.data as { effect?: string };
      const kind = data.effect ?? job.name;
      if (job.processedOn === undefined || job.finishedOn === undefined) continue;
      kinds.set(kind, [...(kinds.get(kind) ?? []), job.finishedOn - job.processedOn]);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  return `job run time medians: ${[...kinds].map(([k, xs]) => `${k} ${med(xs)} ms`).join(', ')}`;
}

/** Effects recorded `done` on every call so far (one count per effect), in the calls' effects documents. */
async function countDone(app: App): Promise<number> {
  const calls = app.db.collection('call_effects');
  let n = 0;
  for (const effect of CALL_EFFECTS) n += await calls.countDocuments({ [`effects.${effect}.state`]: 'done' });
  return n;
}

/** Which Redis the run is on, for the log and the rows' notes. */
function redisLabel(app: App): string {
  return app.redis.isCluster
    ? `Redis Cluster of ${masters(app.redis).length} masters (REDIS_CLUSTER=true)`
    : 'one redis-server';
}

async function makeFirms(app: App, base: string, fakes: Fakes, count: number): Promise<Firm[]> {
  const firms: Firm[] = [];
  for (let i = 0; i < count; i++) {
    const secret = `whsec_${randomBytes(16).toString('hex')}`;
    const t = await makeTenant(app, base, {
      voice_webhook_secret: secret,
      notification_emails: ['intake@lawfirm.test'],
      slack_webhook_url: fakes.slack.webhookUrl(),
      crm: { provider: 'clio', access_token: fakes.clio.token, base_url: fakes.clio.url },
    });
    firms.push({ slug: t.slug, secret });
  }
  return firms;
}

export const scaleEffects: Scenario = {
  name: 'scale-effects',
  ids: [
    'scaleout_effects_2w',
    'scaleout_effects_4w',
    'scaleout_effects_2w_one_firm',
    'scaleout_effects_4w_one_firm',
  ],
  async run(ctx) {
    const lat = latency();
    const fakes: Fakes = {
      clio: await startFakeClio(`clio_${rand(8)}`, { latency: lat }),
      slack: await startFakeSlack({ latency: lat }),
      smtp: await startFakeSmtp({ latency: lat }),
    };
    atExit(async () => {
      await fakes.clio.close();
      await fakes.slack.close();
      await fakes.smtp.stop();
    });
    const app = await createApp(ctx.stores, 'effects', {
      SMTP_URL: fakes.smtp.url,
      MAIL_FROM: 'intake@service.test',
    });
    try {
      const web = await app.startWeb();
      const spread = await makeFirms(app, web.base, fakes, FIRMS);
      const one = await makeFirms(app, web.base, fakes, 1);
      say(
        `scale-effects: ${DELIVERIES} deliveries per run, WORKER_CONCURRENCY=${CONCURRENCY}, providers answer in ${lat.minMs}–${lat.maxMs} ms, ${redisLabel(app)}`,
      );
      const slots = await slotMap(app, one[0]!.slug);
      if (slots !== '') say(`scale-effects: hash slots on the cluster:\n  ${slots}`);
      const rows: Row[] = [];
      for (const [mode, firms] of [
        ['spread', spread],
        ['one firm', one],
      ] as const) {
        const rates = new Map<number, number[]>(WORKERS.map((w) => [w, []]));
        for (let round = 1; round <= ROUNDS; round++) {
          for (const w of WORKERS) {
            const load = loadAverage();
            const r = await runOnce(
              app,
              web.base,
              firms,
              w,
              `${mode === 'spread' ? 'spread' : 'one'}${round}-${w}w`,
            );
            rates.get(w)!.push(r.rate);
            say(
              `scale-effects ${mode}, round ${round}, ${w} worker(s): ${r.done} effects in ${r.seconds.toFixed(1)} s = ${r.rate.toFixed(1)}/s (load average ${load} → ${loadAverage()}); ${r.cpu}`,
            );
            say(`scale-effects ${mode}, round ${round}, ${w} worker(s): ${r.masters}`);
          }
        }
        const suffix = mode === 'spread' ? '' : '_one_firm';
        const where = mode === 'spread' ? `${FIRMS} firms` : 'one firm';
        for (const [w, limit] of [
          [2, 1.8],
          [4, 3.2],
        ] as const) {
          rows.push(
            ratioRow(
              {
                id: `scaleout_effects_${w}w${suffix}`,
                label: `call effects done/s, ${w} worker processes (${where})`,
                unit: '/s',
                baselineLabel: 'one worker process',
                target: { op: '>=', limit },
                note: `call_analyzed pipeline against Clio, Slack and SMTP fakes answering in ${lat.minMs}–${lat.maxMs} ms; WORKER_CONCURRENCY=${CONCURRENCY} per process; ${DELIVERIES} deliveries (${DELIVERIES * CALL_EFFECTS.length} effects) per measurement, ${where}; ${redisLabel(app)}`,
              },
              rates.get(w)!,
              rates.get(1)!,
            ),
          );
        }
      }
      return rows;
    } finally {
      await app.close();
    }
  },
};
