// The cost of one intake end to end (docs/performance.md): N simulated calls placed through
// create-outbound-call, each played by the simulator, analysed, and its effects done — the lead,
// the Clio contact and matter, the mail and the Slack post — against local Clio, SMTP and Slack
// servers running in this bench process (their CPU is the bench's, not the stack's).
//   cpu_per_call_ms       CPU seconds of every process of the stack (web, worker, Redis, FerretDB,
//                         PostgreSQL) over the burst until every queue is empty, ÷ N, in ms;
//                         printed per process beside Redis commands per call.
//   capacity_calls_per_s  N ÷ the burst's wall time (the soak's capacity probe, as a row).
//   capacity_vs_dial_ceiling  that, against the most a burst of N can reach at any CPU a call:
//                         the calls queue's dial limiter lets the last call go after ⌊(N − 1) / max⌋
//                         seconds, and one call alone on the idle stack takes what it takes.
// Each round also prints where its wall time went (bench/lib/burst-timeline.ts): when the calls
// were created, dialled, started, ended, analysed and done, and how busy the machine was.
// Both are absolute: the baseline is a figure recorded from main at the start of the work, in
// the same session and conditions (BENCH_COST_BASELINE_CPU_MS, BENCH_COST_BASELINE_CAPACITY);
// without one the ratio is not computed. Knobs: BENCH_COST_CALLS (120), BENCH_COST_ROUNDS (2),
// BENCH_COST_CONCURRENCY (10 requests in flight), BENCH_COST_LONG_TRANSCRIPT (0; 1: ~27 KB
// transcripts). The simulator's own jobs run in the worker and
// are counted in it (it is the voice provider the service runs with here).
// Where the database work goes, per call: MongoDB commands by kind (serverStatus
// metrics.commands), and — when the stack's FerretDB runs on the local PostgreSQL — rows
// inserted, updated and deleted and tables read (sequential and index scans) per collection,
// from PostgreSQL's pg_stat_user_tables mapped to collection names by FerretDB's
// _ferretdb_database_metadata, with the collection's mean row size (what an update rewrites).
// With an external MONGODB_URI those rows are not printed. BENCH_COST_ORIGINS=1 also prints each
// round's MongoDB calls and Redis commands (BullMQ's included) per call by where in the service
// (or in BullMQ) they are made (bench/lib/command-origins.mjs, preloaded into the web and worker;
// its stack captures add CPU, so such a run is for the map).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { ensurePostgres } from '../../scripts/local/services.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { QUEUE, QUEUE_NAMES, QUEUE_SETTINGS } from '../../jobs/queues.js';
import { startFakeClio } from '../../test/fakes/clio-server.js';
import { startFakeSlack } from '../../test/fakes/slack-server.js';
import { startFakeSmtp } from '../../test/fakes/smtp-server.js';
import { api, atExit, createApp, makeTenant, type App, type Tenant } from '../lib/stack.js';
import { checkInterrupted, knob, loadAverage, loop, cpuByGroup, say } from '../lib/measure.js';
import { mongoCounters } from '../lib/ops.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { trackJobs } from '../lib/jobs-per-call.js';
import { replayStores, type StoreRecipe } from '../lib/store-replay.js';
import { originsEnv, originsTable, snapshotOrigins } from '../lib/command-origins.js';
import { BusySampler, burstTimeline } from '../lib/burst-timeline.js';
import { callsCollection } from '../../core/domain/calls/calls.js';

const CALLS = knob('BENCH_COST_CALLS', 120, 20_000);
const ROUNDS = knob('BENCH_COST_ROUNDS', 2, 10);
const CONCURRENCY = knob('BENCH_COST_CONCURRENCY', 10, 500);
const SIM_CALL_MS = 2000;
/** Replayed calls in flight: enough to keep FerretDB and PostgreSQL busy on both cores. */
const REPLAY_CONCURRENCY = knob('BENCH_COST_REPLAY_CONCURRENCY', 20, 500);
/**
 * BENCH_COST_LONG_TRANSCRIPT=1: the calls are played by an agent whose greeting and 50 intake
 * questions are as long as the API takes (about 27 KB of transcript a call, real calls run to
 * 200k characters) instead of the default agent's few lines: what an update of the call rewrites.
 */
const LONG_TRANSCRIPT = process.env.BENCH_COST_LONG_TRANSCRIPT === '1';
/** BENCH_COST_ORIGINS=1: the MongoDB calls and Redis commands of each round by origin (bench/lib/command-origins.ts). */
const ORIGINS = process.env.BENCH_COST_ORIGINS === '1';

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

/** MongoDB commands so far, by name (serverStatus metrics.commands), handshakes left out. */
async function mongoCommands(admin: MongoClient): Promise<Map<string, number>> {
  return new Map(Object.entries(await mongoCounters(admin)).filter(([, n]) => n > 0));
}

interface TableStats {
  ins: number;
  upd: number;
  del: number;
  seq: number;
  idx: number;
  /** Mean stored row size, bytes (table size ÷ live rows). */
  rowBytes: number;
}

const run = promisify(execFile);

/**
 * PostgreSQL's counters per collection of the app's database (its FerretDB schema), or null
 * when the stack's PostgreSQL is not ours to read. The counters of other backends reach the
 * statistics up to ten seconds after their last transaction: read them after a quiet pause.
 */
async function collectionStats(app: App, psql: string | null, pgUrl: string | undefined) {
  if (psql === null || pgUrl === undefined) return null;
  const schema = app.db.databaseName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const sql = `SELECT m._jsonb->>'_id', s.n_tup_ins, s.n_tup_upd, s.n_tup_del, coalesce(s.seq_scan,0), coalesce(s.idx_scan,0),
    CASE WHEN s.n_live_tup > 0 THEN pg_table_size(s.relid) / s.n_live_tup ELSE 0 END
    FROM pg_stat_user_tables s JOIN "${schema}"._ferretdb_database_metadata m ON m._jsonb->>'table' = s.relname
    WHERE s.schemaname = '${schema}'`;
  const { stdout } = await run(psql, [pgUrl, '-At', '-F', '\t', '-c', sql]);
  const out = new Map<string, TableStats>();
  for (const line of stdout.split('\n').filter(Boolean)) {
    const [name, ins, upd, del, seq, idx, rowBytes] = line.split('\t');
    out.set(name!, { ins: +ins!, upd: +upd!, del: +del!, seq: +seq!, idx: +idx!, rowBytes: +rowBytes! });
  }
  return out;
}

/** The per-call table of two readings of collectionStats: one line per collection that was written or read. */
function collectionTable(before: Map<string, TableStats>, after: Map<string, TableStats>): string {
  const per = (n: number) => (n / CALLS).toFixed(2).replace(/\.?0+$/, '');
  const rows = [...after.entries()]
    .map(([name, a]) => {
      const b = before.get(name) ?? { ins: 0, upd: 0, del: 0, seq: 0, idx: 0, rowBytes: 0 };
      return {
        name,
        ins: a.ins - b.ins,
        upd: a.upd - b.upd,
        del: a.del - b.del,
        seq: a.seq - b.seq,
        idx: a.idx - b.idx,
        rowBytes: a.rowBytes,
      };
    })
    .filter((r) => r.ins + r.upd + r.del + r.seq + r.idx > 0)
    .sort((x, y) => y.ins + y.upd + y.del + y.seq + y.idx - (x.ins + x.upd + x.del + x.seq + x.idx));
  const lines = rows.map(
    (r) =>
      `    ${r.name.padEnd(28)} ins ${per(r.ins).padStart(5)}  upd ${per(r.upd).padStart(5)}  del ${per(r.del).padStart(5)}  ` +
      `seq scans ${per(r.seq).padStart(5)}  idx scans ${per(r.idx).padStart(6)}  row ${String(r.rowBytes).padStart(6)} B`,
  );
  const sum = (k: 'ins' | 'upd' | 'del' | 'seq' | 'idx') => per(rows.reduce((a, r) => a + r[k], 0));
  lines.push(
    `    ${'(all)'.padEnd(28)} ins ${sum('ins').padStart(5)}  upd ${sum('upd').padStart(5)}  del ${sum('del').padStart(5)}  seq scans ${sum('seq').padStart(5)}  idx scans ${sum('idx').padStart(6)}`,
  );
  return lines.join('\n');
}

/** What a round wrote and read per call, as the store replay's recipe (bench/lib/store-replay.ts). */
function recipeOf(
  before: Map<string, TableStats>,
  after: Map<string, TableStats>,
  finds: number,
): StoreRecipe {
  const collections = [...after.entries()]
    .map(([name, a]) => {
      const b = before.get(name) ?? { ins: 0, upd: 0, del: 0, seq: 0, idx: 0, rowBytes: 0 };
      return {
        name,
        ins: (a.ins - b.ins) / CALLS,
        upd: (a.upd - b.upd) / CALLS,
        del: (a.del - b.del) / CALLS,
      };
    })
    .filter((c) => c.ins + c.upd + c.del > 0);
  return { collections, finds };
}

async function burst(
  app: App,
  base: string,
  t: Tenant,
  named: Map<number, string>,
  round: number,
  pg: { admin: MongoClient; psql: string | null; url: string | undefined },
  originsDir: string | undefined,
): Promise<{
  cpuMs: number;
  capacity: number;
  breakdown: string;
  database: string;
  recipe: StoreRecipe | null;
}> {
  const tablesBefore = await collectionStats(app, pg.psql, pg.url);
  const originsBefore = originsDir === undefined ? null : await snapshotOrigins(originsDir, named);
  const mongoBefore = await mongoCommands(pg.admin);
  const before = cpuByGroup(named);
  // The bench's own process (its HTTP client, the Clio, Slack and SMTP fakes, the polls): not the
  // stack's, but it runs on the same cores, so shown beside it.
  const benchBefore = process.cpuUsage();
  const jobs = await trackJobs(app);
  const commandsBefore = await redisCommands(app);
  const startedAt = Date.now();
  const busy = new BusySampler();
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
  const after = cpuByGroup(named);
  const benchUsed = process.cpuUsage(benchBefore);
  const shares = busy.stop();
  const originsAfter = originsDir === undefined ? null : await snapshotOrigins(originsDir, named);
  const perCall = (now: Map<string, number>, then: Map<string, number>) =>
    new Map([...now].map(([group, used]) => [group, (used - (then.get(group) ?? 0)) / CALLS] as const));
  const per = perCall(after.stack, before.stack);
  const others = [...perCall(after.others, before.others)].filter(([, s]) => s >= 0.00005);
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
  const mongoAfter = await mongoCommands(pg.admin);
  const mongoPer = [...mongoAfter.entries()]
    .map(([cmd, n]) => [cmd, (n - (mongoBefore.get(cmd) ?? 0) - 1) / CALLS] as const)
    .filter(([, n]) => n >= 0.005)
    .sort((a, b) => b[1] - a[1]);
  let recipe: StoreRecipe | null = null;
  let database = `MongoDB commands per call: ${mongoPer.reduce((a, [, n]) => a + n, 0).toFixed(1)} (${mongoPer.map(([c, n]) => `${c} ${n.toFixed(2)}`).join(', ')})`;
  if (tablesBefore !== null) {
    // Other backends' counters reach the statistics within PGSTAT_IDLE_INTERVAL (10 s) of going idle.
    await sleep(11_000);
    const tablesAfter = await collectionStats(app, pg.psql, pg.url);
    if (tablesAfter !== null) {
      database += `\n  PostgreSQL rows per call, by collection:\n${collectionTable(tablesBefore, tablesAfter)}`;
      recipe = recipeOf(tablesBefore, tablesAfter, mongoPer.find(([c]) => c === 'find')?.[1] ?? 0);
    }
  }
  if (originsBefore !== null && originsAfter !== null) {
    database += `\n${originsTable(originsBefore, originsAfter, CALLS)}`;
  }
  const machineBusy = shares.reduce((a, b) => a + b, 0) / Math.max(1, shares.length);
  database +=
    `\n  where the wall time went: ${await burstTimeline(app.db, startedAt)}` +
    `\n  the machine busy ${machineBusy.toFixed(0)} % over the burst; per quarter second: ${shares.map((x) => x.toFixed(0)).join(' ')}`;
  const breakdown = [...per.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([g, s]) => `${g} ${(s * 1000).toFixed(1)}`)
    .join(', ');
  return {
    cpuMs: total * 1000,
    capacity: CALLS / seconds,
    breakdown:
      `CPU per call, ms: ${breakdown}; the bench itself (client, fakes, polls; not counted) ` +
      `${((benchUsed.user + benchUsed.system) / 1000 / CALLS).toFixed(1)}` +
      (others.length === 0
        ? ''
        : `; other processes under the bench (not counted): ${others.map(([g, s]) => `${g} ${(s * 1000).toFixed(1)}`).join(', ')}`) +
      `; ${commands}; ${await jobs.perCall(CALLS)}`,
    database,
    recipe,
  };
}

/**
 * One call alone on the idle stack, from its dial (the dial's mark, after the calls queue's
 * limiter let its job go) until every queue is empty, in seconds: the least time the burst's last
 * call can take once the limiter lets it go (its ringing and talk, SIM_CALL_MS, included). The
 * least of three, so that the bound it gives is one.
 */
async function oneCallSeconds(app: App, base: string, t: Tenant): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const { call_id } = await api<{ call_id: string }>(base, 'POST', '/api/v2/create-outbound-call', t.key, {
      toNumber: `+1415${String(2_000_001 + i)}`,
      agentId: t.agentId,
      firmSlug: t.slug,
      dynamicVariables: { full_name: `Alone ${i}`, email: `alone.${i}@example.com` },
    });
    while ((await backlog(app)) > 0) {
      checkInterrupted();
      await sleep(10);
    }
    const emptied = Date.now();
    const call = await callsCollection(app.db).findOne({ _id: call_id });
    const dialled = call?.dial.started_at?.getTime();
    if (dialled === undefined) throw new Error(`intake-cost: the call alone (${call_id}) was not dialled`);
    times.push((emptied - dialled) / 1000);
  }
  return Math.min(...times);
}

/**
 * The most calls a second a burst of CALLS can reach whatever the CPU a call costs: the dial
 * ceiling (the calls queue's limiter, jobs/queues.ts) lets the last call go only after
 * ⌊(CALLS − 1) / max⌋ of its windows (BullMQ opens a window at the first job it lets go, and
 * the next one no sooner than `duration` later), and that call then takes at least `alone` seconds.
 */
function dialCeiling(alone: number): number {
  const limiter = QUEUE_SETTINGS[QUEUE.calls].limiter;
  if (limiter === undefined) return NaN;
  const windows = Math.floor((CALLS - 1) / limiter.max) * (limiter.duration / 1000);
  return CALLS / (windows + alone);
}

export const intakeCost: Scenario = {
  name: 'intake-cost',
  ids: [
    'cpu_per_call_ms',
    'capacity_calls_per_s',
    'capacity_vs_dial_ceiling',
    'dial_ceiling_vs_capacity_baseline',
    'capacity_vs_stores_only',
    'stores_only_vs_capacity_baseline',
  ],
  async run(ctx) {
    const clio = await startFakeClio(`clio_${Date.now()}`);
    const slack = await startFakeSlack();
    const smtp = await startFakeSmtp();
    atExit(async () => {
      await clio.close();
      await slack.close();
      await smtp.stop();
    });
    const origins = ORIGINS ? originsEnv() : undefined;
    const app = await createApp(ctx.stores, 'intake-cost', {
      ...origins?.env,
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
    if (LONG_TRANSCRIPT) {
      const pad = (text: string, n: number) =>
        `${text} ${'and please tell me more about that. '.repeat(n)}`.slice(0, n);
      const long = await api<{ agent_id: string }>(web.base, 'POST', '/api/v2/create-agent', tenant.key, {
        firmSlug: tenant.slug,
        agent_name: 'Bench agent, long calls',
        voice_id: 'sim-en-us-ava',
        begin_message: pad('Hello, thank you for calling.', 2000),
        intake_questions: [
          { key: 'full_name', question: pad('May I have your full name?', 500) },
          { key: 'email', question: pad('What is your email address?', 500) },
          ...Array.from({ length: 48 }, (_, i) => ({
            key: `detail_${i}`,
            question: pad(`Detail ${i}?`, 500),
          })),
        ],
      });
      tenant.agentId = long.agent_id;
    }
    // A warm-up burst (JIT, connection pools, indexes in cache), not measured.
    say(
      `intake-cost: warm-up, then ${ROUNDS} × ${CALLS} calls${LONG_TRANSCRIPT ? ' (long transcripts)' : ''}; load average ${loadAverage()}`,
    );
    const pgUrl = ctx.stores.local.ferretdb?.postgresUrl;
    const psql = pgUrl === undefined ? null : join(await ensurePostgres(say), 'psql');
    const admin = new MongoClient(ctx.stores.mongodbUri, { serverSelectionTimeoutMS: 5000 });
    atExit(() => admin.close());
    const pg = { admin, psql, url: pgUrl };
    await burst(app, web.base, tenant, named, 0, pg, origins?.dir);
    const alone = await oneCallSeconds(app, web.base, tenant);
    const ceiling = dialCeiling(alone);
    say(
      `intake-cost: one call alone, dialled to every queue empty: ${alone.toFixed(2)} s (the least of 3); ` +
        `the dial ceiling's bound on a burst of ${CALLS}: ${ceiling.toFixed(2)} calls/s`,
    );
    const cpu: number[] = [];
    const capacity: number[] = [];
    const storesOnly: number[] = [];
    const storesOnlyCapacity: number[] = [];
    const scratch = admin.db(`${app.db.databaseName}_replay`);
    atExit(() => scratch.dropDatabase().then(() => undefined));
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await burst(app, web.base, tenant, named, round, pg, origins?.dir);
      say(
        `intake-cost round ${round}: ${r.cpuMs.toFixed(1)} ms CPU per call, ${r.capacity.toFixed(2)} calls/s; ${r.breakdown}; load average ${loadAverage()}`,
      );
      say(`intake-cost round ${round}: ${r.database}`);
      cpu.push(r.cpuMs);
      capacity.push(r.capacity);
      if (r.recipe !== null) {
        // The same round's database work with nothing else: the stores' bound on capacity.
        const replay = await replayStores({
          source: app.db,
          scratch,
          recipe: r.recipe,
          calls: CALLS,
          concurrency: REPLAY_CONCURRENCY,
          cpuSeconds: () => [...cpuByGroup(named).stack.values()].reduce((a, b) => a + b, 0),
        });
        say(
          `intake-cost round ${round}: the stores alone, the round's commands a call replayed ` +
            `(${REPLAY_CONCURRENCY} calls in flight): ${replay.callsPerSecond.toFixed(2)} calls/s, ` +
            `${replay.cpuMsPerCall.toFixed(1)} ms of the stack's CPU a call`,
        );
        storesOnly.push(replay.callsPerSecond);
        storesOnlyCapacity.push(r.capacity);
      }
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
      ratioRow(
        {
          id: 'capacity_vs_dial_ceiling',
          label: 'analysed calls end to end, /s',
          unit: '/s',
          baselineLabel: `what the dial ceiling lets a burst of ${CALLS} reach at any CPU a call`,
          note:
            "The calls queue dials at most its limiter's max a second (jobs/queues.ts), so the last call of " +
            'the burst is dialled only after ⌊(N − 1) / max⌋ seconds, and then takes at least what one call ' +
            'alone on the idle stack takes, dialled to done (its ringing and talk included): N ÷ that sum ' +
            'is the most this burst can show, with no CPU spent at all. dial_ceiling_vs_capacity_baseline ' +
            'below is that bound in multiples of main at the start.',
        },
        capacity,
        capacity.map(() => ceiling),
      ),
      ratioRow(
        {
          id: 'dial_ceiling_vs_capacity_baseline',
          label: `the dial ceiling's bound on a burst of ${CALLS}, /s`,
          unit: '/s',
          baselineLabel: 'main at the start (BENCH_COST_BASELINE_CAPACITY)',
        },
        [ceiling],
        [capacityBaseline],
      ),
    ];
    if (storesOnly.length > 0) {
      rows.push(
        ratioRow(
          {
            id: 'capacity_vs_stores_only',
            label: 'analysed calls end to end, /s',
            unit: '/s',
            baselineLabel:
              "the stores alone doing the round's commands a call, replayed straight to FerretDB (bench/lib/store-replay.ts)",
            note:
              "The stores alone, with no web, worker, Redis or HTTP, issuing a call's inserts, updates, deletes " +
              'and finds as the round did: what capacity cannot pass with these commands on this machine. ' +
              'stores_only_vs_capacity_baseline below is that bound in multiples of main at the start.',
          },
          storesOnlyCapacity,
          storesOnly,
        ),
        ratioRow(
          {
            id: 'stores_only_vs_capacity_baseline',
            label: "the stores alone doing a call's commands, /s",
            unit: '/s',
            baselineLabel: 'main at the start (BENCH_COST_BASELINE_CAPACITY)',
          },
          storesOnly,
          storesOnly.map(() => capacityBaseline),
        ),
      );
    }
    return rows;
  },
};
