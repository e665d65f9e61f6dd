// How the API and the call-event update hold up as the calls collection grows: the same two
// operations timed with 1,000 and with 20,000 calls already stored.
//   npx tsx bench/scale.ts      (BENCH_REQUESTS=300 per operation and size, BENCH_CONCURRENCY=10)
// Not part of `npm test`. Uses REDIS_URL / MONGODB_URI when set, else starts the local Redis and
// FerretDB (on PostgreSQL) as `npm test` does. The web app runs in this process (as the tests
// start it); no workers run.
//   (a) create-outbound-call over HTTP: api key, firm and agent reads, the call insert, the enqueue.
//   (b) a call event: applyCallEvent (what the call-events worker runs per webhook) called
//       directly, a call_started for a stored, not yet placed call: find the call, record the
//       provider's id, raise the status, read it back. Calls differ, so no call lock is needed.
// Stored calls are seeded with the driver: most are ended, with a transcript (as real ones
// are), the ones (b) touches are registered. Everything it made is dropped at the end.
import type { Db, Document } from 'mongodb';
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices, type Services } from '../core/wiring/services.js';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { startWeb, type Web } from '../api/web.js';
import { getFirm } from '../core/domain/firms/firms.js';
import { getFirmAgent } from '../core/domain/agents/agents.js';
import { callsCollection, newOutboundCall } from '../core/domain/calls/calls.js';
import { applyCallEvent } from '../core/domain/calls/call-events.js';
import type { AgentDoc } from '../core/domain/agents/agents.js';
import type { FirmDoc } from '../core/domain/firms/firms.js';
import type { Frozen } from '../core/platform/db/read-cache.js';
import { checkInterrupted, described, interruption, knob, loop, type Rate } from './lib/measure.js';
import { atExit, cleanup, deadline, freshEnvironment, rand, startStores } from './lib/stack.js';
import { seedEndedCalls } from './lib/seed.js';

const REQUESTS = knob('BENCH_REQUESTS', 300, 5000);
const CONCURRENCY = knob('BENCH_CONCURRENCY', 10, 100);
const TRANSCRIPT_BYTES = knob('BENCH_TRANSCRIPT_BYTES', 3000, 100_000);
const WARMUP = Math.min(30, REQUESTS);
const SIZES = [1_000, 20_000];

const say = (line: string): void => void process.stderr.write(`[scale] ${line}\n`);
deadline(15 * 60_000);

/** Runs `op(i)` for i in [0, count), `CONCURRENCY` at a time; latency of each, rate overall. */
const measure = (count: number, op: (i: number) => Promise<void>): Promise<Rate> =>
  loop(CONCURRENCY, count, op);

// ---- seeding ----------------------------------------------------------------------------

/** Tops the calls collection up to `total`, keeping `REQUESTS + WARMUP` new registered calls for (b). */
async function seed(db: Db, firm: FirmDoc, agent: Frozen<AgentDoc>, total: number): Promise<string[]> {
  const calls = callsCollection(db);
  const targets = Array.from({ length: REQUESTS + WARMUP }, () =>
    newOutboundCall({ firm, agent, toNumber: '+14155550100' }, 'simulator'),
  );
  const stored = await calls.countDocuments({});
  const missing = Math.max(0, total - stored - targets.length);
  const started = performance.now();
  checkInterrupted();
  await seedEndedCalls(db, firm, agent, missing, TRANSCRIPT_BYTES, stored);
  // The calls (b) will touch go in last, as the newest calls of a real collection would.
  await calls.insertMany(targets, { ordered: false });
  say(
    `seeded ${missing + targets.length} calls in ${((performance.now() - started) / 1000).toFixed(1)} s; ${await calls.countDocuments({})} stored`,
  );
  return targets.map((c) => c._id);
}

// ---- what the database makes of the app's queries -------------------------------------

/** FerretDB's explain carries PostgreSQL's plan (queryPlanner.Plan); MongoDB's its winning plan. */
async function planOf(db: Db, collection: string, filter: Document): Promise<string> {
  try {
    const e: Document = await db.collection(collection).find(filter).limit(1).explain();
    const plan = (e.queryPlanner as Document | undefined)?.Plan as Document | undefined;
    if (plan !== undefined) {
      const nodes: string[] = [];
      const walk = (p: Document): void => {
        nodes.push(String(p['Node Type']) + (p['Index Name'] ? ` ${String(p['Index Name'])}` : ''));
        for (const child of (p.Plans as Document[] | undefined) ?? []) walk(child);
      };
      walk(plan);
      return `${nodes.join(' > ')}; filter pushed down: ${String(e.filterPushdown)}`;
    }
    const winning = (e.queryPlanner as Document | undefined)?.winningPlan as Document | undefined;
    return JSON.stringify(winning ?? e).slice(0, 120);
  } catch (err) {
    return `explain failed: ${String(err)}`;
  }
}

// ---- the run ----------------------------------------------------------------------------

async function main(): Promise<void> {
  const stores = await startStores();
  const { env, adminKey } = freshEnvironment(stores, 'scale', { PORT: '0' });
  const config = loadConfig(env);
  const services: Services = createServices(config, createLogger(config.logLevel, 'scale'), 'producer');
  const db = services.mongo.db;
  const started: { web?: Web } = {};
  atExit(async () => {
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
  const post = async <T>(path: string, token: string, body: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const parsed = (await res.json()) as T;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(parsed)}`);
    return parsed;
  };

  const slug = `scale-${rand()}`;
  await post('/api/firms', adminKey, { slug, name: 'Scale bench firm' });
  const { key } = await post<{ key: string }>('/api/auth/api-keys', adminKey, {
    firmSlug: slug,
    name: 'scale',
  });
  const { agent_id } = await post<{ agent_id: string }>('/api/v2/create-agent', key, {
    firmSlug: slug,
    agent_name: 'Scale agent',
    voice_id: 'sim-en-us-ava',
  });
  const firm = (await getFirm(db, slug))!;
  const agent = await getFirmAgent(db, slug, agent_id);
  const createBody = JSON.stringify({
    toNumber: '+14155550123',
    agentId: agent_id,
    firmSlug: slug,
    dynamicVariables: { first_name: 'Bench', case_type: 'load test' },
  });
  const create = async (): Promise<void> => {
    const res = await fetch(`${base}/api/v2/create-outbound-call`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: createBody,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`create-outbound-call: ${res.status}`);
  };
  const callEvent = (callId: string) => async (): Promise<void> => {
    const { advanced } = await applyCallEvent(
      db,
      {
        firm: slug,
        event: 'call_started',
        call: {
          call_id: `sim_${callId}`,
          call_status: 'ongoing',
          start_timestamp: Date.now(),
          metadata: { call_id: callId },
        },
        received_at: Date.now(),
      },
      callId,
    );
    if (!advanced) throw new Error(`call_started did not advance ${callId}`);
  };

  const results: Array<{ size: number; create: Rate; event: Rate; stored: number }> = [];
  for (const size of SIZES) {
    const targets = await seed(db, firm, agent, size);
    say(`${size} calls: ${WARMUP} + ${REQUESTS} create-outbound-call, ${CONCURRENCY} at a time`);
    await measure(WARMUP, create);
    const created = await measure(REQUESTS, create);
    say(`${size} calls: ${WARMUP} + ${REQUESTS} call events (applyCallEvent), ${CONCURRENCY} at a time`);
    await measure(WARMUP, (i) => callEvent(targets[i]!)());
    const event = await measure(REQUESTS, (i) => callEvent(targets[WARMUP + i]!)());
    results.push({ size, create: created, event, stored: await callsCollection(db).countDocuments({}) });
  }

  const someCall = (await callsCollection(db).findOne({}, { projection: { _id: 1, provider_call_id: 1 } }))!;
  const plans: Array<[string, string, Document]> = [
    ['calls', 'by _id', { _id: someCall._id }],
    ['calls', 'by _id and firm (call event)', { _id: someCall._id, firm: slug }],
    ['calls', 'by _id, status_rank $lt (event update)', { _id: someCall._id, status_rank: { $lt: 1 } }],
    ['calls', 'by firm and provider_call_id', { firm: slug, provider_call_id: someCall.provider_call_id }],
    ['api_keys', 'by key_hash (every request)', { key_hash: 'x' }],
  ];

  const ms = (n: number): string => `${n.toFixed(1)} ms`.padStart(9);
  const rate = (n: number): string => `${n.toFixed(0)}/s`.padStart(7);
  const ratio = (a: number, b: number): string => `×${(a / b).toFixed(2)}`.padStart(7);
  const lines = [
    '',
    `MongoDB: ${stores.mongodbUri.replace(/\/\/[^@/]*@/, '//')}   ${REQUESTS} timed operations per row, ${CONCURRENCY} at a time`,
    '',
    'operation                      calls stored      p50       p95    rate',
  ];
  const row = (name: string, stored: string, t: Rate): string =>
    `${name.padEnd(30)} ${stored.padStart(12)} ${ms(t.p50)} ${ms(t.p95)} ${rate(t.rate)}${t.failed ? `  (${t.failed} failed)` : ''}`;
  for (const [label, pick] of [
    ['create-outbound-call (HTTP)', (r: (typeof results)[number]) => r.create],
    ['call event (applyCallEvent)', (r: (typeof results)[number]) => r.event],
  ] as const) {
    for (const r of results) lines.push(row(label, `${r.size.toLocaleString('en')}+`, pick(r)));
    const [small, large] = [pick(results[0]!), pick(results[1]!)];
    lines.push(
      `${'  ratio 20k ÷ 1k'.padEnd(30)} ${''.padStart(12)} ${ratio(large.p50, small.p50).padStart(9)} ${ratio(large.p95, small.p95).padStart(9)} ${ratio(large.rate, small.rate)}`,
    );
  }
  lines.push(
    '',
    'calls stored at the end of each size: ' + results.map((r) => r.stored).join(', '),
    '',
    'query plans (explain of the same filter as a find):',
  );
  for (const [collection, label, filter] of plans)
    lines.push(`  ${label.padEnd(40)} ${await planOf(db, collection, filter)}`);
  process.stdout.write(lines.join('\n') + '\n');
}

main().then(
  async () => {
    await cleanup();
    process.exit(0);
  },
  async (err: unknown) => {
    if (!interruption.interrupted) process.stderr.write(`scale bench failed: ${described(err)}\n`);
    await cleanup();
    process.exit(interruption.interrupted ? 130 : 1);
  },
);
