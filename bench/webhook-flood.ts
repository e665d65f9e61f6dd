// One firm floods the call webhook: firm A posts BENCH_FLOOD_EVENTS call_started events
// (default 2,000) 16 at a time, then firm B posts one. Printed: how long the flood took to send,
// how long after its own event B's call was applied, how long until the call-events queue
// drained; it fails unless B's call and every one of A's were applied. `npm test` runs the same
// flood with 300 events (test/hardening/webhook-abuse.test.ts); this is its full size.
//   npx tsx bench/webhook-flood.ts   (BENCH_FLOOD_EVENTS=2000, BENCH_FLOOD_CONNECTIONS=16)
// Not part of `npm test`. Starts its own Redis and FerretDB (the local ones), runs the web and the
// workers in this process with the service's defaults (WORKER_CONCURRENCY 10), removes everything.
import { setTimeout as sleep } from 'node:timers/promises';
import { COLLECTIONS } from '../core/platform/db/collections.js';
import { ApiClient } from '../test/helpers/client.js';
import { deadline, rand, startStores, runScript } from './lib/stack.js';
import { startInProcessApp } from './lib/in-process.js';
import { knob, loadAverage, say } from './lib/measure.js';

const EVENTS = knob('BENCH_FLOOD_EVENTS', 2000, 100_000);
const CONNECTIONS = knob('BENCH_FLOOD_CONNECTIONS', 16, 256);
/** Only stops a wait that would never end. */
const HANG_GUARD_MS = 10 * 60_000;

const event = (callId: string) => ({
  event: 'call_started',
  call: { call_id: callId, call_status: 'ongoing', direction: 'inbound' },
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + HANG_GUARD_MS;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${HANG_GUARD_MS / 60_000} min`);
    await sleep(50);
  }
}

async function main(): Promise<void> {
  deadline(30 * 60_000);
  const stores = await startStores();
  const app = await startInProcessApp(stores, 'webhook-flood');
  app.startWorkers();
  const { services, admin } = app;
  const api = new ApiClient(app.base);
  const firm = async (): Promise<{ slug: string; client: ApiClient }> => {
    const slug = `firm-${rand()}`;
    const created = await admin.post('/api/firms', { slug, name: `Firm ${slug}` });
    if (created.status !== 200) throw new Error(`firm: ${created.status} ${JSON.stringify(created.body)}`);
    const key = await admin.post('/api/auth/api-keys', { firmSlug: slug, name: 'bench' });
    if (key.status !== 200) throw new Error(`key: ${key.status} ${JSON.stringify(key.body)}`);
    return { slug, client: api.withToken((key.body as { key: string }).key) };
  };
  const a = await firm();
  const b = await firm();
  say(`firm A floods ${EVENTS} call_started events, ${CONNECTIONS} at a time (load ${loadAverage()})`);

  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < EVENTS) {
        const i = next++;
        const res = await a.client.post(`/api/v2/${a.slug}/webhook`, event(`a_${i}_${rand(3)}`));
        if (res.status !== 200) throw new Error(`event ${i}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }),
  );
  const flooded = Date.now();
  const providerId = `b_${rand()}`;
  const res = await b.client.post(`/api/v2/${b.slug}/webhook`, event(providerId));
  if (res.status !== 200) throw new Error(`firm B's event: ${res.status}`);
  const calls = services.mongo.db.collection(COLLECTIONS.calls);
  await until(
    async () => (await calls.findOne({ firm: b.slug, provider_call_id: providerId }))?.status === 'ongoing',
    "firm B's call applied",
  );
  const applied = Date.now();
  await until(async () => {
    const counts = await services.queues['call-events'].getJobCounts('waiting', 'active');
    return (counts.waiting ?? 0) + (counts.active ?? 0) === 0;
  }, 'call-events drained');
  const drained = Date.now();
  const ongoing = await calls.countDocuments({ firm: a.slug, status: 'ongoing' });
  console.table([
    {
      events: EVENTS,
      'sent in ms': flooded - started,
      'B applied ms after its event': applied - flooded,
      'all drained ms after the flood': drained - flooded,
      "A's calls applied": `${ongoing}/${EVENTS}`,
      load: loadAverage(),
    },
  ]);
  if (ongoing !== EVENTS) {
    console.error(`FAIL: ${EVENTS - ongoing} of firm A's events not applied`);
    process.exitCode = 1;
  }
}

runScript(main);
