/* eslint-disable @typescript-eslint/no-explicit-any -- the bench reads loosely-typed JSON answers and documents, as the tests do */
// RingCentral at full size (docs/ringcentral.md#bench), against the spec-checked RingCentral
// (test/fakes/ringcentral-server.ts):
//  1. A firm connected with OAuth (PKCE), its subscription made.
//  2. FSync of BENCH_RC_CONTACTS (default 3,000) contacts in pages of 250 (12), with a 429 on
//     page 4, every access token expired after page 6 and the worker process SIGKILLed after
//     page 8 (a new one takes the job over); the counts compared with a CSV-style import of the
//     same rows into a firm of its own.
//  3. Then 40 changes and 10 deletions arrive by ISync in one page.
//  4. BENCH_RC_MISSED (default 50) missed calls spread over BENCH_RC_SPREAD_S (default 60) seconds
//     from 40 callers (10 of them twice), plus 3 callers on the firm's do-not-call list and one
//     forged delivery; delay_seconds BENCH_RC_DELAY_S (default 60). For each callback: the time
//     from the missed call's delivery to the callback being registered and to the simulator's
//     dial, p50/p99/max against delay + 10 s.
//   npx tsx bench/ringcentral.ts      (about 3 minutes; not part of `npm test`)
import { setTimeout as sleep } from 'node:timers/promises';
import { COLLECTIONS } from '../core/platform/db/collections.js';
import { ringCentralContactRow } from '../core/domain/contacts/ringcentral-contact-row.js';
import { missedCallEvent, startFakeRingCentral } from '../test/fakes/ringcentral-server.js';
import { exitOf, startWorkerProcess } from '../test/helpers/worker-process.js';
import { atExit, cleanup, deadline, rand, startStores } from './lib/stack.js';
import { startInProcessApp } from './lib/in-process.js';
import { described, knob, percentile, say } from './lib/measure.js';

const CONTACTS = knob('BENCH_RC_CONTACTS', 3000, 100_000);
const MISSED = knob('BENCH_RC_MISSED', 50, 5000);
const SPREAD_S = knob('BENCH_RC_SPREAD_S', 60, 3600);
const DELAY_S = knob('BENCH_RC_DELAY_S', 60, 3600);
const CALLERS = 40;
const SYNC_PATH = '/restapi/v1.0/account/~/extension/~/address-book-sync';
const pad = (n: number, w = 4) => String(n).padStart(w, '0');
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function until<T>(what: string, check: () => Promise<T | null>, timeoutMs = 600_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function main(): Promise<void> {
  deadline(30 * 60_000);
  const rc = await startFakeRingCentral();
  atExit(() => rc.close());
  const stores = await startStores();
  const app = await startInProcessApp(stores, 'ringcentral', {
    SIM_CALL_MS: '200',
    RINGCENTRAL_CLIENT_ID: rc.oauth.clientId,
    RINGCENTRAL_CLIENT_SECRET: rc.oauth.clientSecret,
    RINGCENTRAL_SERVER: rc.url,
    // A dead worker's job is taken over after 2 s, its import turn after 4 s.
    JOB_LOCK_MS: '2000',
    CONTACTS_IMPORT_LOCK_MS: '4000',
  });
  const { env, adminKey, services, base, admin } = app;
  const ok = async (res: Promise<{ status: number; body: any }>, what: string, status = 200) => {
    const r = await res;
    if (r.status !== status) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const firm = async (settings: Record<string, unknown> = {}) => {
    const slug = `bench-${rand()}`;
    await ok(
      admin.post('/api/firms', { slug, name: 'Bench', settings: { timezone: 'UTC', ...settings } }),
      'firm',
    );
    return slug;
  };
  const connect = async (slug: string) => {
    const res = await fetch(`${base}/api/integrations/ringcentral/connect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ firmSlug: slug }),
    });
    const cookie = res.headers.getSetCookie()[0]!.split(';')[0]!;
    const { authorize_url } = (await res.json()) as { authorize_url: string };
    const approved = await fetch(authorize_url, { redirect: 'manual' });
    const back = await fetch(approved.headers.get('location')!, { headers: { cookie } });
    if (back.status !== 200) throw new Error(`connect: ${back.status} ${await back.text()}`);
  };
  const sync = async (slug: string) =>
    (await ok(admin.post('/api/contacts/sync', { firmSlug: slug, source: 'ringcentral' }), 'sync', 202))
      .job_id as string;
  const syncDone = (jobId: string) =>
    until(`sync ${jobId}`, async () => {
      const r = await admin.get(`/api/contacts/sync/${jobId}`);
      return r.body.status === 'running' ? null : r.body;
    });

  // 1–2. The full sync, the worker killed once.
  const slug = await firm();
  await connect(slug);
  const first = 80_000_000;
  for (let i = 0; i < CONTACTS; i++) {
    rc.addContact({
      id: first + i,
      firstName: `First${i}`,
      lastName: `Last${i}`,
      email: i % 50 === 7 ? `rc${first + i - 1}@example.com` : `rc${first + i}@example.com`,
      ...(i % 50 === 13 ? { mobilePhone: '12345' } : { businessPhone: `+1415666${pad(i % 10_000)}` }),
    });
  }
  let child = startWorkerProcess({ ...env, WORKER_QUEUES: 'contacts,maintenance' });
  const pagesAsked = () => rc.requests.filter((r) => r.path === SYNC_PATH).length;
  const t0 = Date.now();
  const jobId = await sync(slug);
  await until('page 4', async () => (pagesAsked() >= 4 ? true : null));
  rc.failNext.push({ status: 429, path: SYNC_PATH, retryAfter: '1' });
  await until('page 6', async () => (pagesAsked() >= 7 ? true : null));
  const refreshesBefore = rc.oauth.refreshCount();
  rc.oauth.expireAccessTokens();
  await until('page 8', async () => (pagesAsked() >= 10 ? true : null));
  child.kill('SIGKILL');
  await exitOf(child);
  const atKill = await services.mongo.db.collection<any>(COLLECTIONS.contactSyncs).findOne({ _id: jobId });
  say(`worker SIGKILLed with ${atKill.pages} pages counted`);
  child = startWorkerProcess({ ...env, WORKER_QUEUES: 'contacts,maintenance' });
  atExit(async () => {
    child.kill('SIGTERM');
    await exitOf(child);
  });
  const result = await syncDone(jobId);
  const fsyncMs = Date.now() - t0;
  const rows = [...rc.contacts.values()].flatMap((c) => ringCentralContactRow(c) ?? []);
  const control = await firm();
  const imported = await ok(
    admin.post('/api/contacts/import', { firmSlug: control, contacts: rows }),
    'import',
  );
  const same =
    result.imported === imported.imported &&
    result.duplicates === imported.duplicates &&
    result.errors === imported.errors;
  say(
    `FSync of ${CONTACTS}: ${JSON.stringify(result)} in ${s(fsyncMs)}; requests ${pagesAsked()} ` +
      `(pages ${Math.ceil(CONTACTS / 250)}, one 429, 401s then ${rc.oauth.refreshCount() - refreshesBefore} refresh(es), worker killed once); ` +
      `import of the same ${rows.length} rows ${JSON.stringify({ imported: imported.imported, duplicates: imported.duplicates, errors: imported.errors })}: ${same ? 'SAME' : 'DIFFERENT'}`,
  );

  // 3. ISync: 40 changes, 10 deletions.
  const stored = new Set(
    (
      await services.mongo.db
        .collection<any>(COLLECTIONS.contacts)
        .find({ firm: slug }, { projection: { external_id: 1 } })
        .toArray()
    ).map((c) => Number(c.external_id)),
  );
  const ids = [...stored].sort((a, b) => a - b);
  for (const id of ids.slice(100, 140)) rc.updateContact(id, { lastName: `Changed${id}` });
  for (const id of ids.slice(200, 210)) rc.deleteContact(id);
  const before = pagesAsked();
  const second = await syncDone(await sync(slug));
  say(
    `ISync with 40 changes and 10 deletions: ${JSON.stringify(second)}; pages read ${pagesAsked() - before}`,
  );

  // 4. Missed calls.
  const agentId = (
    await ok(
      admin.post('/api/v2/create-agent', {
        firmSlug: slug,
        agent_name: 'Intake',
        voice_id: 'sim-en-us-ava',
        begin_message: 'Hello, you called us a moment ago.',
        intake_questions: [{ key: 'full_name', question: 'Your name?' }],
      }),
      'agent',
    )
  ).agent_id as string;
  await ok(
    admin.patch(`/api/firms/${slug}`, {
      settings: {
        max_concurrent_calls: 100,
        missed_call_callback: { enabled: true, agent_id: agentId, delay_seconds: DELAY_S },
      },
    }),
    'settings',
  );
  const callers = Array.from({ length: CALLERS }, (_, i) => `+1646777${pad(i)}`);
  const listed = ['+16467779001', '+16467779002', '+16467779003'];
  await ok(admin.post('/api/compliance/dnc', { firmSlug: slug, phones: listed }), 'dnc');
  app.startWorkers();
  const sub = [...rc.subscriptions.values()].find((x) => x.address.includes(`/${slug}/`))!;
  const forged = await fetch(`${base}/api/v2/${slug}/phone-webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'verification-token': 'forged' },
    body: JSON.stringify(missedCallEvent(sub, { from: callers[0]!, to: '+16467770000' })),
  });
  const schedule = [...callers, ...callers.slice(0, MISSED - CALLERS), ...listed];
  const sentAt = new Map<string, number>();
  const t1 = Date.now();
  for (const [i, from] of schedule.entries()) {
    const due = t1 + Math.floor((i * SPREAD_S * 1000) / schedule.length);
    if (due > Date.now()) await sleep(due - Date.now());
    const sessionId = `bench-${i}`;
    sentAt.set(`${slug}|${sessionId}`, Date.now());
    await rc.deliver((x) =>
      x.id === sub.id ? missedCallEvent(x, { from, to: '+16467770000', sessionId }) : { event: 'none' },
    );
  }
  say(
    `${schedule.length} missed calls delivered over ${s(Date.now() - t1)} (${MISSED} from ${CALLERS} callers, ${listed.length} from listed numbers); forged delivery: ${forged.status}`,
  );
  const missed = await until(
    'every callback decided',
    async () => {
      const docs = await services.mongo.db
        .collection<any>(COLLECTIONS.missedCalls)
        .find({ firm: slug })
        .toArray();
      return docs.length === schedule.length && docs.every((d) => d.outcome !== 'pending') ? docs : null;
    },
    (DELAY_S + SPREAD_S + 120) * 1000,
  );
  const called = missed.filter((d) => d.outcome === 'called');
  const sim = services.mongo.db.collection<any>(COLLECTIONS.simulatorCalls);
  const dialled = await until('every callback dialled', async () => {
    const docs = await sim
      .find({ 'metadata.call_id': { $in: called.map((d) => d.callback_call_id) } })
      .toArray();
    return docs.length >= called.length ? docs : null;
  });
  const dialAt = new Map(
    dialled.map((d) => [d.metadata.call_id as string, d.created_at.getTime() as number]),
  );
  const registered = called.map((d) => d.decided_at.getTime() - sentAt.get(d._id)!).sort((a, b) => a - b);
  const dial = called.map((d) => dialAt.get(d.callback_call_id)! - sentAt.get(d._id)!).sort((a, b) => a - b);
  const perCaller = new Map<string, number>();
  for (const d of dialled) perCaller.set(d.to_number, (perCaller.get(d.to_number) ?? 0) + 1);
  const outcomes: Record<string, number> = {};
  for (const d of missed) outcomes[d.outcome] = (outcomes[d.outcome] ?? 0) + 1;
  const limit = (DELAY_S + 10) * 1000;
  say(
    `callbacks ${called.length} (distinct callers ${new Set(called.map((d) => d.caller)).size}, most dials to one number ${Math.max(...perCaller.values())}); ` +
      `outcomes ${JSON.stringify(outcomes)}; dials to listed numbers ${await sim.countDocuments({ to_number: { $in: listed } })}`,
  );
  say(
    `delivery → callback registered: p50 ${s(percentile(registered, 0.5))}, p99 ${s(percentile(registered, 0.99))}, max ${s(registered.at(-1)!)}; ` +
      `delivery → dialled: p50 ${s(percentile(dial, 0.5))}, p99 ${s(percentile(dial, 0.99))}, max ${s(dial.at(-1)!)} ` +
      `(limit delay ${DELAY_S} s + 10 s: ${percentile(dial, 0.99) <= limit ? 'within' : 'OVER'})`,
  );
}

main()
  .catch((err: unknown) => {
    process.exitCode = 1;
    say(`failed: ${described(err)}`);
  })
  .finally(() => cleanup().then(() => process.exit()));
