// Redis and the web process's memory while large contacts imports wait for a worker
// (docs/contacts.md#memory):
//   npx tsx bench/import-memory.ts      (BENCH_IMPORTS=6, BENCH_IMPORT_MB=15, BENCH_STAGGER_MS=2000,
//                                        BENCH_WEB_HEAP_MIB=0: the web's old-space limit, 0 default)
// The web runs as a child process as `npm start` runs it (BENCH_RUNTIME=dist: the compiled code,
// after `npm run build`; default here tsx). No worker runs, so every import stays queued. Each
// import is 5,000 valid rows of about BENCH_IMPORT_MB MB in all, sent by a firm of its own (the
// per-firm cap on pending imports is not what is measured), one every BENCH_STAGGER_MS, as a
// client at its request rate sends them: all are waiting at once, but their bodies are not read
// and parsed at the same moment. Each request waits its CONTACTS_IMPORT_WAIT_MS (default 25 s)
// and answers 202.
// RSS follows V8's garbage collection more than what the process keeps; BENCH_WEB_HEAP_MIB=160
// shows what it keeps: a web that held every waiting import's body runs out of heap.
// Prints Redis INFO used_memory and the web's VmRSS before, the peak sampled VmRSS while the
// requests wait, both again once every request has answered (and the VmRSS 30 s after that),
// and the largest job's data.
// Uses REDIS_URL / MONGODB_URI when set, else starts the local Redis and FerretDB.
import { described, knob, loadAverage, RssSampler, rssMiB, say } from './lib/measure.js';
import { cleanup, createApp, deadline, makeTenant, startStores } from './lib/stack.js';

process.env.BENCH_RUNTIME ??= 'tsx';
const IMPORTS = knob('BENCH_IMPORTS', 6, 20);
const IMPORT_MB = knob('BENCH_IMPORT_MB', 15, 16);
const STAGGER_MS = knob('BENCH_STAGGER_MS', 2000, 10_000);
const ROWS = 5000;
const HEAP_MIB = knob('BENCH_WEB_HEAP_MIB', 0, 4096);

const mib = (n: number): string => `${n.toFixed(0)} MiB`;
const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

/** One import's body: 5,000 valid contacts whose notes pad it to about IMPORT_MB MB. */
function importBody(firmSlug: string, n: number): string {
  const pad = 'n'.repeat(Math.floor((IMPORT_MB * 1e6) / ROWS) - 120);
  const contacts = Array.from({ length: ROWS }, (_, i) => ({
    first_name: `Bench ${n}-${i}`,
    phone: `+1212${String(n).padStart(3, '0')}${String(i).padStart(4, '0')}`,
    email: `bench${n}.${i}@example.com`,
    notes: pad,
  }));
  return JSON.stringify({ firmSlug, contacts });
}

async function main(): Promise<void> {
  deadline(10 * 60_000);
  const stores = await startStores();
  const app = await createApp(
    stores,
    'import-memory',
    HEAP_MIB > 0
      ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${HEAP_MIB}`.trim() }
      : {},
  );
  say(`web heap limit: ${HEAP_MIB > 0 ? mib(HEAP_MIB) : "Node's default"}`);
  const usedMemory = async (): Promise<number> =>
    Number(/used_memory:(\d+)/.exec(await app.redis.info('memory'))?.[1] ?? NaN);
  const web = await app.startWeb();
  const tenants = await Promise.all(Array.from({ length: IMPORTS }, () => makeTenant(app, web.base)));
  const post = (key: string, body: string): Promise<number | string> =>
    fetch(`${web.base}/api/contacts/import`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body,
    }).then(
      async (res) => {
        await res.arrayBuffer();
        return res.status;
      },
      (err: unknown) => `failed (${(err as Error).message})`,
    );

  const bodies = tenants.map((t, n) => importBody(t.slug, n + 1));
  say(`${IMPORTS} imports of ${ROWS} rows, ${mb(Buffer.byteLength(bodies[0]!))} each, no worker running`);
  const heapUsed = async (): Promise<string> => {
    const text = await fetch(`${web.base}/metrics`).then((r) => r.text());
    return mb(Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? NaN));
  };
  say(`web heap used before: ${await heapUsed()}`);
  const redisBefore = await usedMemory();
  const rssBefore = rssMiB(web.pid);
  const sampler = new RssSampler(web.pid, 10).start();
  const started = Date.now();
  // While every import waits (the last sent 10 s ago): what the web has in its heap then.
  const midWait = new Promise<string>((resolve) =>
    setTimeout(
      () => void heapUsed().then((heap) => resolve(`heap used ${heap}, VmRSS ${mib(rssMiB(web.pid))}`)),
      (IMPORTS - 1) * STAGGER_MS + 10_000,
    ),
  );
  const statuses = await Promise.all(
    tenants.map(async (t, n) => {
      await new Promise((resolve) => setTimeout(resolve, n * STAGGER_MS));
      return post(t.key, bodies[n]!);
    }),
  );
  const ms = Date.now() - started;
  sampler.stop();
  // What stays once the requests are done: what the web and Redis keep of waiting imports.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  say(`while all ${IMPORTS} wait: ${await midWait}`);
  const alive = web.child.exitCode === null && web.child.signalCode === null;
  say(`web process ${alive ? 'alive' : `exited (${web.child.exitCode ?? web.child.signalCode})`}`);
  const redisAfter = await usedMemory();
  const rssAfter = rssMiB(web.pid);
  // V8 gives freed pages back to the system a while after the last allocation.
  await new Promise((resolve) => setTimeout(resolve, 30_000));
  const rssIdle = rssMiB(web.pid);
  say(`web heap used 30 s after the answers: ${await heapUsed()}`);

  const jobs = await app.queues.contacts.getJobs(['waiting', 'delayed', 'active']);
  const largest = Math.max(0, ...jobs.map((j) => Buffer.byteLength(JSON.stringify(j.data))));
  say(
    `answers: ${statuses.join(', ')} in ${ms} ms; ${jobs.length} jobs queued, the largest job's data ${mb(largest)}`,
  );
  say(
    `Redis used_memory: before ${mb(redisBefore)}, after ${mb(redisAfter)} (+${mb(redisAfter - redisBefore)})`,
  );
  say(
    `web VmRSS: before ${mib(rssBefore)}, peak while waiting ${mib(sampler.peak)}, after ${mib(rssAfter)}, ` +
      `30 s later ${mib(rssIdle)}; load average ${loadAverage()}`,
  );
}

main()
  .catch((error: unknown) => {
    say(`failed: ${described(error)}`);
    process.exitCode = 2;
  })
  .finally(() => cleanup());
