// A 5,000-row contacts import against a raw driver baseline on the same database.
//   npx tsx bench/contacts-import.ts            (BENCH_RUNS=5 alternating runs per side)
// Not part of `npm test`. Uses REDIS_URL / MONGODB_URI when set, else starts the local Redis and
// FerretDB (on PostgreSQL) as `npm test` does. The web and worker processes run as children (as
// in production), so the timing includes HTTP, the 16 MiB body, the job round trip and the
// worker; the request waits for the result (200), as it does under 25 s.
//   import:   POST /api/contacts/import with 5,000 new rows (phone and email each), timed to
//             its 200: parse and normalise every row, claim 10,000 keys, insert 5,000 contacts.
//   baseline: what a naive importer does with the driver: one `$in` lookup of the 5,000 phones
//             and one of the 5,000 emails in a scratch collection, then one insertMany of the
//             same 5,000 rows into it (no normalisation, no race safety).
// Then the same again with every row already there (a re-import: all duplicates): the import
// against the two `$in` lookups alone. Runs alternate, each side gets fresh rows, and both
// collections grow alike; the medians and their ratio are printed. Everything is dropped at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient, type Collection } from 'mongodb';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { QUEUE_NAMES } from '../jobs/queues.js';
import { freePort, startLocalServices } from '../scripts/local/services.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bounded = (name: string, fallback: number, max: number): number => {
  const n = Number(process.env[name] ?? fallback);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback;
};
// Each run (and the warm-up) takes its own area code, so at most 11 runs.
const RUNS = bounded('BENCH_RUNS', 5, 11);
const ROWS = 5000;
const DEADLINE_MS = 20 * 60_000;

const deadline = setTimeout(() => {
  process.stderr.write(`bench: gave up after ${DEADLINE_MS / 60_000} min\n`);
  process.exit(2);
}, DEADLINE_MS);
deadline.unref();

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const rand = () => randomBytes(4).toString('hex');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Batch `run` of distinct people: valid US numbers (area code by batch) and emails. */
function rows(run: number, side: 'import' | 'baseline') {
  const areas = ['212', '310', '415', '617', '202', '312', '404', '503', '602', '702', '713', '305'];
  const exchange = side === 'import' ? '555' : '556';
  return Array.from({ length: ROWS }, (_, i) => ({
    first_name: `First${i}`,
    last_name: `Run${run}`,
    phone: `+1 ${areas[run]} ${exchange} ${String(i).padStart(4, '0')}`,
    email: `person${i}.run${run}.${side}@example.com`,
    company: `Company ${i % 97}`,
  }));
}

async function post(url: string, token: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function waitReady(base: string): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the web process did not become ready');
}

async function timedImport(base: string, token: string, firm: string, contacts: unknown[]) {
  const started = performance.now();
  const res = await post(`${base}/api/contacts/import`, token, { firmSlug: firm, contacts });
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`import answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { ms, result: res.body as { imported: number; duplicates: number; errors: number } };
}

interface ScratchRow {
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
  company: string;
}

async function timedBaseline(scratch: Collection<ScratchRow>, contacts: ScratchRow[], insert: boolean) {
  const started = performance.now();
  const phones = await scratch.find({ phone: { $in: contacts.map((c) => c.phone) } }).toArray();
  const emails = await scratch.find({ email: { $in: contacts.map((c) => c.email) } }).toArray();
  if (insert) await scratch.insertMany(contacts.map((c) => ({ ...c })));
  return { ms: performance.now() - started, found: phones.length + emails.length };
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
    RATE_LIMIT_PER_MINUTE: '1000000',
    WORKER_QUEUES: 'contacts',
  };
  const mongo = new MongoClient(mongoUri.toString());
  const db = mongo.db();
  await ensureIndexes(db);
  const scratch = db.collection<ScratchRow>(`bench_scratch_${rand()}`);
  // The baseline's lookups get the indexes a naive importer would add.
  await scratch.createIndexes([{ key: { phone: 1 } }, { key: { email: 1 } }]);
  const children: ChildProcess[] = [
    spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], { cwd: root, env, stdio: 'inherit' }),
    spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], { cwd: root, env, stdio: 'inherit' }),
  ];
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitReady(base);
    const firm = `bench-${rand()}`;
    await post(`${base}/api/firms`, adminKey, { slug: firm, name: 'Bench firm' });
    say('warm-up: one 5,000-row import and one baseline');
    await timedImport(base, adminKey, firm, rows(RUNS, 'import'));
    await timedBaseline(scratch, rows(RUNS, 'baseline'), true);

    const fresh = { import: [] as number[], baseline: [] as number[] };
    const again = { import: [] as number[], baseline: [] as number[] };
    for (let run = 0; run < RUNS; run++) {
      const mine = rows(run, 'import');
      const theirs = rows(run, 'baseline');
      // Alternate which side goes first, so neither always meets a warmer database.
      const sides = run % 2 === 0 ? (['import', 'baseline'] as const) : (['baseline', 'import'] as const);
      for (const side of sides) {
        if (side === 'import') {
          const { ms, result } = await timedImport(base, adminKey, firm, mine);
          if (result.imported !== ROWS) throw new Error(`run ${run}: imported ${result.imported}`);
          fresh.import.push(ms);
        } else {
          fresh.baseline.push((await timedBaseline(scratch, theirs, true)).ms);
        }
      }
      for (const side of sides) {
        if (side === 'import') {
          const { ms, result } = await timedImport(base, adminKey, firm, mine);
          if (result.duplicates !== ROWS) throw new Error(`run ${run} again: ${JSON.stringify(result)}`);
          again.import.push(ms);
        } else {
          const { ms, found } = await timedBaseline(scratch, theirs, false);
          if (found !== 2 * ROWS) throw new Error(`baseline run ${run} again found ${found}`);
          again.baseline.push(ms);
        }
      }
      say(
        `run ${run + 1}/${RUNS}: new rows ${fresh.import.at(-1)!.toFixed(0)} ms vs ${fresh.baseline.at(-1)!.toFixed(0)} ms; ` +
          `all duplicates ${again.import.at(-1)!.toFixed(0)} ms vs ${again.baseline.at(-1)!.toFixed(0)} ms`,
      );
    }
    const contacts = await db.collection('contacts').countDocuments({ firm });
    const line = (name: string, xs: { import: number[]; baseline: number[] }) =>
      `${name.padEnd(34)} import ${median(xs.import).toFixed(0).padStart(6)} ms   baseline ${median(
        xs.baseline,
      )
        .toFixed(0)
        .padStart(6)} ms   ratio ${(median(xs.import) / median(xs.baseline)).toFixed(2)}`;
    process.stdout.write(
      [
        `contacts import, ${ROWS.toLocaleString('en-US')} rows, median of ${RUNS} alternating runs ` +
          `(${process.env.MONGODB_URI ? 'MONGODB_URI' : 'local FerretDB on PostgreSQL'})`,
        line('new rows (vs 2 × $in + insertMany)', fresh),
        line('all duplicates (vs 2 × $in)', again),
        `contacts stored: ${contacts.toLocaleString('en-US')}`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))),
    );
    const connection = new Redis(local.redisUrl, { maxRetriesPerRequest: 1 });
    for (const name of QUEUE_NAMES) {
      const queue = new Queue(name, { connection, prefix });
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
    }
    connection.disconnect();
    await db.dropDatabase().catch(() => {});
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
