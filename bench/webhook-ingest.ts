// Call webhook ingest (POST /api/v2/{firm}/webhook) against a bare BullMQ `queue.add` loop on the
// same Redis, at the same concurrency, in alternating rounds of steady load; medians and their
// ratio printed.
//   npx tsx bench/webhook-ingest.ts     (BENCH_ROUNDS=3, BENCH_SECONDS=5, BENCH_CONNECTIONS=10,
//                                        BENCH_AUTH=signed|bearer)
// Every request is a distinct Retell call_analyzed body (a new call id, so every request really
// enqueues) signed with x-retell-signature as Retell signs (or sent with the firm's API key).
// The web process runs as a child (as in production), so the load generator does not share its
// event loop; no workers run: this measures the door (authentication, the HMAC over the raw
// body, validation, the bounded snapshot, the per-firm webhook rate limit, the enqueue) against
// the enqueue alone with the same job payload. Loopback only, bounded in time; not part of
// `npm test`. Uses REDIS_URL / MONGODB_URI when set, else starts a local Redis and FerretDB.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { snapshotProviderCall } from '../core/domain/calls/provider-call.js';
import { freePort, startLocalServices } from '../scripts/local/services.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bounded = (name: string, fallback: number, max: number): number => {
  const n = Number(process.env[name] ?? fallback);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback;
};
const ROUNDS = bounded('BENCH_ROUNDS', 3, 9);
const SECONDS = bounded('BENCH_SECONDS', 5, 60);
const CONNECTIONS = bounded('BENCH_CONNECTIONS', 10, 100);
const AUTH = process.env.BENCH_AUTH === 'bearer' ? 'bearer' : 'signed';
const SECRET = `whsec_${randomBytes(16).toString('hex')}`;
const DEADLINE_MS = 120_000 + ROUNDS * SECONDS * 2 * 1000 * 2;

const deadline = setTimeout(() => {
  process.stderr.write(`bench: gave up after ${DEADLINE_MS / 1000} s\n`);
  process.exit(2);
}, DEADLINE_MS);
deadline.unref();

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const rand = () => randomBytes(4).toString('hex');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** A call_analyzed body as Retell sends it (about 3 KB), for a fresh call id. */
function callAnalyzed(n: number) {
  const start = Date.now() - 200_000;
  const lines = [
    'Agent: Thank you for calling. May I have your full name?',
    'User: Jordan Lee.',
    'Agent: What number can we reach you on?',
    'User: 415 555 0123.',
    'Agent: And your email address?',
    'User: jordan.lee@example.com',
    'Agent: Briefly, what happened?',
    'User: I was rear-ended at a red light last week and my neck still hurts.',
  ];
  return {
    event: 'call_analyzed',
    call: {
      call_type: 'phone_call',
      call_id: `bench_${rand()}_${n}`,
      agent_id: 'agent_bench',
      agent_version: 1,
      call_status: 'ended',
      direction: 'inbound',
      from_number: '+14155550123',
      to_number: '+14155550100',
      start_timestamp: start,
      end_timestamp: start + 185_000,
      duration_ms: 185_000,
      disconnection_reason: 'user_hangup',
      transcript: `${lines.join('\n')}\n`,
      transcript_object: lines.map((l) => ({
        role: l.startsWith('Agent') ? 'agent' : 'user',
        content: l,
        words: [],
      })),
      metadata: {},
      retell_llm_dynamic_variables: { customer_name: 'Jordan' },
      call_analysis: {
        call_summary: 'Jordan Lee was rear-ended last week and has neck pain; wants a callback.',
        user_sentiment: 'Negative',
        call_successful: true,
        in_voicemail: false,
        custom_analysis_data: {
          name: 'Jordan Lee',
          phone_number: '+14155550123',
          email: 'jordan.lee@example.com',
          case_type: 'Personal Injury',
          urgency: 'normal',
        },
      },
    },
  };
}

async function json<T = Record<string, string>>(url: string, token: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const parsed: unknown = await res.json();
  if (!res.ok) throw new Error(`${url}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed as T;
}

async function waitReady(base: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const ok = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the web process did not become ready');
}

interface WebRound {
  rate: number;
  ok: number;
  other: number;
  p50: number;
  p99: number;
}

async function webRound(base: string, slug: string, key: string, seconds: number): Promise<WebRound> {
  let n = 0;
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        path: `/api/v2/${slug}/webhook`,
        setupRequest: (req) => {
          const raw = JSON.stringify(callAnalyzed(n++));
          const ts = Date.now();
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (AUTH === 'signed') {
            headers['x-retell-signature'] = `v=${ts},d=${createHmac('sha256', SECRET)
              .update(raw + ts)
              .digest('hex')}`;
          } else {
            headers.authorization = `Bearer ${key}`;
          }
          return { ...req, body: raw, headers };
        },
      },
    ],
  });
  return {
    rate: result['2xx'] / result.duration,
    ok: result['2xx'],
    other: result.non2xx + result.errors,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

/** The same job payload the web enqueues, added in a loop with CONNECTIONS adds in flight. */
async function bareRound(queue: Queue, slug: string, seconds: number): Promise<number> {
  let n = 0;
  const until = Date.now() + seconds * 1000;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < until) {
        const body = callAnalyzed(n++);
        const data = {
          firm: slug,
          event: body.event,
          call: snapshotProviderCall(body.call),
          received_at: Date.now(),
        };
        await queue.add('call-event', data, {
          jobId: `evt|${slug}|${body.event}|${body.call.call_id}`,
          removeOnComplete: { age: 3600, count: 200 },
          removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
        });
      }
    }),
  );
  return n / (Number(process.hrtime.bigint() - started) / 1e9);
}

async function main(): Promise<void> {
  const local = await startLocalServices(
    { redisUrl: process.env.REDIS_URL, mongodbUri: process.env.MONGODB_URI },
    say,
  );
  const mongoUri = new URL(local.mongodbUri);
  mongoUri.pathname = `/bench_${rand()}`;
  const port = await freePort();
  const prefix = `bench${rand()}`;
  const adminKey = `adm_${randomBytes(16).toString('hex')}`;
  const env = {
    ...process.env,
    REDIS_URL: local.redisUrl,
    MONGODB_URI: mongoUri.toString(),
    ADMIN_API_KEY: adminKey,
    SESSION_SECRET: randomBytes(24).toString('hex'),
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'warn',
    QUEUE_PREFIX: prefix,
    VOICE_PROVIDER: 'simulator',
    RATE_LIMIT_PER_MINUTE: '1000000',
    WEBHOOK_RATE_LIMIT_PER_MINUTE: '10000000',
  };
  const mongo = new MongoClient(mongoUri.toString());
  await ensureIndexes(mongo.db());
  const web = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  const base = `http://127.0.0.1:${port}`;
  const connection = new Redis(local.redisUrl, { maxRetriesPerRequest: 1 });
  const events = new Queue('call-events', { connection, prefix });
  const bare = new Queue('bench-baseline', { connection, prefix });
  const empty = async () => {
    await events.obliterate({ force: true });
    await bare.obliterate({ force: true });
  };
  try {
    await waitReady(base);
    const slug = `bench-${rand()}`;
    await json(`${base}/api/firms`, adminKey, {
      slug,
      name: 'Bench firm',
      settings: { voice_webhook_secret: SECRET },
    });
    const { key } = await json<{ key: string }>(`${base}/api/auth/api-keys`, adminKey, {
      firmSlug: slug,
      name: 'bench',
    });

    say(`warm-up: 2 s of each (${AUTH} webhooks, ${CONNECTIONS} connections)`);
    await webRound(base, slug, key, 2);
    await bareRound(bare, slug, 2);
    await empty();
    const web: WebRound[] = [];
    const adds: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const w = await webRound(base, slug, key, SECONDS);
      await empty();
      const b = await bareRound(bare, slug, SECONDS);
      await empty();
      web.push(w);
      adds.push(b);
      say(
        `round ${round}: webhook ${w.rate.toFixed(0)} req/s (${w.ok} × 200, ${w.other} other; p50 ${w.p50} ms, p99 ${w.p99} ms) · ` +
          `bare add ${b.toFixed(0)} adds/s · ratio ${(w.rate / b).toFixed(2)}`,
      );
    }
    const webMedian = median(web.map((w) => w.rate));
    const bareMedian = median(adds);
    process.stdout.write(
      [
        `webhook ingest (${AUTH})   ${webMedian.toFixed(0)} req/s median of ${ROUNDS} × ${SECONDS} s, ${CONNECTIONS} connections ` +
          `(p50 ${median(web.map((w) => w.p50))} ms, p99 ${median(web.map((w) => w.p99))} ms; non-200 ${web.reduce((a, w) => a + w.other, 0)})`,
        `bare BullMQ queue.add     ${bareMedian.toFixed(0)} adds/s median, ${CONNECTIONS} in flight, same payload`,
        `ratio (webhook / bare)    ${(webMedian / bareMedian).toFixed(2)} (medians); per round ${web
          .map((w, i) => (w.rate / adds[i]!).toFixed(2))
          .join(', ')}`,
        '',
      ].join('\n'),
    );
  } finally {
    web.kill('SIGTERM');
    await new Promise((r) => web.once('exit', r));
    await empty().catch(() => {});
    await events.close();
    await bare.close();
    connection.disconnect();
    await mongo
      .db()
      .dropDatabase()
      .catch(() => {});
    await mongo.close();
    await local.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
