// Booking-webhook ingest (Cal.com deliveries signed with X-Cal-Signature-256, each a new
// booking) against a bare BullMQ `queue.add` loop of the same jobs on the same Redis.
//   npx tsx bench/booking-webhook.ts            (BENCH_REQUESTS=3000, BENCH_CONNECTIONS=10)
// Loopback only, bounded in count and time; not part of `npm test`. Uses REDIS_URL /
// MONGODB_URI when set, else starts a local Redis and FerretDB. The web process runs as a
// child (as in production). No workers run: this measures what the receiver does per delivery
// (firm read, HMAC over the raw body, validation, the bounded snapshot, the enqueue) against the
// enqueue alone.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { freePort, startLocalServices } from '../scripts/local/services.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bounded = (name: string, fallback: number, max: number): number => {
  const n = Number(process.env[name] ?? fallback);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback;
};
const REQUESTS = bounded('BENCH_REQUESTS', 3000, 50_000);
const CONNECTIONS = bounded('BENCH_CONNECTIONS', 10, 100);
const WARMUP = Math.min(300, REQUESTS);
const DEADLINE_MS = 180_000;

const deadline = setTimeout(() => {
  process.stderr.write(`bench: gave up after ${DEADLINE_MS / 1000} s\n`);
  process.exit(2);
}, DEADLINE_MS);
deadline.unref();

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const rand = () => randomBytes(4).toString('hex');

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

const SECRET = `whsec_${randomBytes(16).toString('hex')}`;
const START = Date.now() + 7 * 24 * 3600_000;

/** One Cal.com BOOKING_CREATED delivery for booking `i`, as Cal.com's webhook code sends it. */
function delivery(i: number): string {
  return JSON.stringify({
    triggerEvent: 'BOOKING_CREATED',
    createdAt: new Date().toISOString(),
    payload: {
      type: '30min',
      title: 'Initial consultation',
      description: 'Bench booking',
      startTime: new Date(START + i * 60_000).toISOString(),
      endTime: new Date(START + i * 60_000 + 1800_000).toISOString(),
      organizer: { id: 1, name: 'Alex Counsel', email: 'alex@lawfirm.test', timeZone: 'America/New_York' },
      attendees: [{ email: `client${i}@example.com`, name: `Client ${i}`, timeZone: 'Europe/Paris' }],
      location: 'https://cal.com/video/bench',
      uid: `bench${rand()}${i}`,
      bookingId: i,
      status: 'ACCEPTED',
    },
  });
}

async function baselineAdds(redisUrl: string, prefix: string, count: number): Promise<number> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const queue = new Queue('bench-baseline', { connection, prefix });
  let next = 0;
  const run = async (n: number): Promise<number> => {
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < n) {
          const i = next++;
          const body = JSON.parse(delivery(i)) as { payload: Record<string, unknown> };
          await queue.add('booking-event', body.payload, { jobId: `booking_${rand()}_${i}` });
        }
      }),
    );
    return Number(process.hrtime.bigint() - started) / 1e9;
  };
  await run(WARMUP);
  next = 0;
  const seconds = await run(count);
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return count / seconds;
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
  try {
    await waitReady(base);
    const slug = `bench-${rand()}`;
    await json(`${base}/api/firms`, adminKey, {
      slug,
      name: 'Bench firm',
      settings: { booking_webhook_secret: SECRET, notification_emails: ['desk@lawfirm.test'] },
    });
    let counter = 0;
    const options: autocannon.Options = {
      url: `${base}/api/v2/${slug}/booking-webhook`,
      method: 'POST',
      connections: CONNECTIONS,
      requests: [
        {
          setupRequest: (request) => {
            const raw = delivery(counter++);
            return {
              ...request,
              body: raw,
              headers: {
                'Content-Type': 'application/json',
                'X-Cal-Signature-256': createHmac('sha256', SECRET).update(raw).digest('hex'),
              },
            };
          },
        },
      ],
      timeout: 10,
    };
    say(`warm-up: ${WARMUP} deliveries`);
    await autocannon({ ...options, amount: WARMUP });
    say(`booking-webhook: ${REQUESTS} signed deliveries over ${CONNECTIONS} connections`);
    const result = await autocannon({ ...options, amount: REQUESTS });
    const ok = result['2xx'];
    const apiRate = ok / result.duration;
    say(`bare queue.add: ${REQUESTS} adds, ${CONNECTIONS} at a time`);
    const bareRate = await baselineAdds(local.redisUrl, prefix, REQUESTS);

    const connection = new Redis(local.redisUrl, { maxRetriesPerRequest: 1 });
    const bookings = new Queue('bookings', { connection, prefix });
    const queued = await bookings.getJobCountByTypes('waiting', 'prioritized', 'delayed');
    await bookings.obliterate({ force: true }).catch(() => {});
    await bookings.close();
    connection.disconnect();
    process.stdout.write(
      [
        `booking-webhook       ${apiRate.toFixed(0)} req/s  (${ok} × 200, ${result.non2xx} non-2xx, ${result.errors} errors; ` +
          `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms)`,
        `bare BullMQ queue.add ${bareRate.toFixed(0)} adds/s`,
        `ratio (API / bare)    ${(apiRate / bareRate).toFixed(2)}`,
        `booking jobs queued   ${queued} (warm-up included)`,
        '',
      ].join('\n'),
    );
  } finally {
    web.kill('SIGTERM');
    await new Promise((r) => web.once('exit', r));
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
