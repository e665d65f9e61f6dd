// The call webhook's door (docs/webhooks.md#authentication-before-the-body):
// Retell's signature checked over the raw body with the firm's secret; a refused request leaves nothing
// behind; an accepted one is one job whose id derives from the firm, the event and the call, so a repeat
// adds nothing; and a 200 is never sent for a delivery not kept (in the queue, or in MongoDB while Redis is down).
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { deliveredCallEvents } from '../helpers/webhook-outbox.js';
import { expectError } from '../helpers/expect-error.js';
import { callsOf, postSigned, retellCallAnalyzed } from './support.js';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import { analysisDigest } from '../../jobs/call-analysis.js';
import { acceptDelivery } from '../../core/domain/deliveries/delivery-outbox.js';
import { createServices } from '../../core/wiring/services.js';
import { createLogger } from '../../core/platform/logger.js';

const SECRET_A = 'whsec_firm_a_secret_value';
const SECRET_B = 'whsec_firm_b_secret_value';

let stack: Stack;
let a: Awaited<ReturnType<typeof createFirm>>;
let b: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack(); // no workers: what the request itself leaves behind is visible
  a = await createFirm(stack, { voice_webhook_secret: SECRET_A });
  b = await createFirm(stack, { voice_webhook_secret: SECRET_B });
});
afterAll(async () => stack?.stop());

const eventQueue = () => stack.services.queues['call-events'];
const jobsOf = async (providerCallId: string) =>
  (await eventQueue().getJobs(['waiting', 'active', 'delayed', 'completed', 'failed'])).filter(
    (j) => j.data.call.call_id === providerCallId,
  );

/**
 * The job id and firm of each delivery of a provider call, wherever it was made durable: its job
 * in the queue, or its entry in the webhook outbox. An add slower than ENQUEUE_TIMEOUT_MS (a loaded
 * machine) sends a delivery there, and, with no worker here to drain it, every later delivery of
 * this stack too. A delivery found in both (its slow add landed after its entry was kept) is one
 * delivery: both carry the same job id.
 */
async function deliveriesOf(providerCallId: string): Promise<Array<{ id: string; firm: string }>> {
  const { jobs, kept } = await deliveredCallEvents(stack, [providerCallId], { completed: true });
  const firmById = new Map<string, string>();
  for (const job of jobs) firmById.set(job.id!, job.data.firm);
  for (const entry of kept) firmById.set(entry.delivery!, entry.data.firm);
  return [...firmById].map(([id, firm]) => ({ id, firm }));
}

function signedWith(slug: string, raw: string, signature: string) {
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signature },
  });
}

describe('Retell signatures (x-retell-signature)', () => {
  it('a valid signature is accepted and enqueues the event', async () => {
    const body = retellCallAnalyzed();
    const res = await postSigned(stack, a.slug, SECRET_A, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect((await deliveriesOf(body.call.call_id)).map((d) => d.firm)).toEqual([a.slug]);
  });

  it('invalid, stale, future, tampered and another firm’s secret are 401, and leave nothing behind', async () => {
    const body = retellCallAnalyzed();
    const raw = JSON.stringify(body);
    const now = Date.now();
    const tampered = raw.replace('"Personal Injury"', '"Family Law"');
    expect(tampered).not.toBe(raw);
    const cases: Array<[string, Promise<Awaited<ReturnType<typeof signedWith>>>]> = [
      ['invalid (garbage digest)', signedWith(a.slug, raw, `v=${now},d=${'0'.repeat(64)}`)],
      ['invalid (not the scheme)', signedWith(a.slug, raw, 'sha256=abcdef')],
      ['stale (6 minutes old)', signedWith(a.slug, raw, signRetellWebhook(raw, SECRET_A, now - 6 * 60_000))],
      [
        'future (6 minutes ahead)',
        signedWith(a.slug, raw, signRetellWebhook(raw, SECRET_A, now + 6 * 60_000)),
      ],
      ['tampered body', signedWith(a.slug, tampered, signRetellWebhook(raw, SECRET_A))],
      [
        'signed for another timestamp',
        signedWith(
          a.slug,
          raw,
          signRetellWebhook(raw, SECRET_A, now - 1000).replace(`v=${now - 1000}`, `v=${now}`),
        ),
      ],
      ['another firm’s secret', signedWith(a.slug, raw, signRetellWebhook(raw, SECRET_B))],
    ];
    for (const [name, pending] of cases) {
      const res = await pending;
      expect(res.status, name).toBe(401);
      expectError(res, 401, 'unauthorized');
    }
    expect(await deliveriesOf(body.call.call_id)).toEqual([]);
    expect(await callsOf(stack).countDocuments({ provider_call_id: body.call.call_id })).toBe(0);
  });

  it('a signature made with firm B’s secret is valid for firm B only', async () => {
    const body = retellCallAnalyzed();
    expectError(await postSigned(stack, a.slug, SECRET_B, body), 401, 'unauthorized');
    expect((await postSigned(stack, b.slug, SECRET_B, body)).status).toBe(200);
    expect((await deliveriesOf(body.call.call_id)).map((d) => d.firm)).toEqual([b.slug]);
  });

  it('an unknown firm with only a signature is answered as a wrong signature (401), so slugs cannot be enumerated', async () => {
    expectError(
      await postSigned(stack, `no-firm-${rand(3)}`, SECRET_A, retellCallAnalyzed()),
      401,
      'unauthorized',
    );
  });
});

describe('one job per firm, event and call', () => {
  it('the job id derives from the firm, the event and the provider call id (and the analysis, for call_analyzed); repeats add nothing', async () => {
    const analyzed = retellCallAnalyzed();
    const pid = analyzed.call.call_id;
    const digest = analysisDigest(snapshotProviderCall({ ...analyzed.call }));
    const { call_analysis: _a, ...ended } = analyzed.call;
    const deliveries = [
      postSigned(stack, a.slug, SECRET_A, analyzed),
      postSigned(stack, a.slug, SECRET_A, analyzed),
      postSigned(stack, a.slug, SECRET_A, { event: 'call_ended', call: ended }),
      postSigned(stack, a.slug, SECRET_A, { event: 'call_ended', call: ended }),
      postSigned(stack, b.slug, SECRET_B, analyzed),
    ];
    for (const res of await Promise.all(deliveries)) expect(res.body).toEqual({ received: true });
    const ids = (await deliveriesOf(pid)).map((d) => d.id).sort();
    expect(ids).toEqual(
      [
        `evt|${a.slug}|call_analyzed|${pid}|${digest}`,
        `evt|${a.slug}|call_ended|${pid}`,
        `evt|${b.slug}|call_analyzed|${pid}|${digest}`,
      ].sort(),
    );
  });

  it('other events are acknowledged and not enqueued', async () => {
    const body = { ...retellCallAnalyzed(), event: 'transcript_updated' };
    const res = await postSigned(stack, a.slug, SECRET_A, body);
    expect(res.body).toEqual({ received: true });
    expect(await deliveriesOf(body.call.call_id)).toEqual([]);
  });
});

describe('a 200 only for a delivery kept durably', () => {
  let redis: PrivateRedis;
  let outage: Stack;
  let firm: Awaited<ReturnType<typeof createFirm>>;

  beforeAll(async () => {
    // A private Redis, so stopping it does not disturb test files running in parallel.
    redis = await startPrivateRedis();
    outage = await startStack({ env: { REDIS_URL: redis.url } });
    firm = await createFirm(outage, { voice_webhook_secret: SECRET_A });
  });
  afterAll(async () => {
    await outage?.stop();
    await redis?.remove();
  });

  it('while Redis is down a delivery (signed or bearer) is kept in the MongoDB outbox and answered 200; once it is back, straight to the queue', async () => {
    const outbox = outage.services.mongo.db.collection(COLLECTIONS.webhookOutbox);
    expect((await postSigned(outage, firm.slug, SECRET_A, retellCallAnalyzed())).status).toBe(200);
    // Kept there already if its add took longer than ENQUEUE_TIMEOUT_MS (a loaded machine).
    const before = await outbox.countDocuments({});
    await redis.stop();
    await eventually(async () => expect(outage.services.redis.status).not.toBe('ready'));

    const signed = await postSigned(outage, firm.slug, SECRET_A, retellCallAnalyzed());
    expect(signed.status).toBe(200);
    const bearer = await firm.client.post(`/api/v2/${firm.slug}/webhook`, retellCallAnalyzed());
    expect(bearer.status).toBe(200);
    expect(await outbox.countDocuments({ firm: firm.slug })).toBe(before + 2);
    // A refused delivery is not kept.
    const forged = await postSigned(outage, firm.slug, SECRET_B, retellCallAnalyzed());
    expectError(forged, 401, 'unauthorized');
    expect(await outbox.countDocuments({})).toBe(before + 2);

    await redis.start();
    await eventually(async () => expect((await outage.api.get('/readyz')).status).toBe(200), 20_000);
    await outbox.deleteMany({}); // what a worker's drain does (test/webhooks/redis-outage-deliveries.test.ts)
    await sleep(600);
    const body = retellCallAnalyzed();
    expect((await postSigned(outage, firm.slug, SECRET_A, body)).status).toBe(200);
    // Its add was made: its job is in the queue, if late. An add slower than ENQUEUE_TIMEOUT_MS (a
    // loaded machine) also keeps a copy in the outbox, but still lands; a gate left shut makes no
    // add at all, and no worker here would move the outbox's entry.
    await eventually(async () => {
      const jobs = await outage.services.queues['call-events'].getJobs(['waiting']);
      expect(jobs.some((j) => j.data.call.call_id === body.call.call_id)).toBe(true);
    });
  });
});

describe('a web process that has just started', () => {
  const outbox = () => stack.services.mongo.db.collection(COLLECTIONS.webhookOutbox);

  /** A web process's services, new (its outbox gate shut, as at a start), connected to Redis. */
  async function withNewProcess(run: (fresh: ReturnType<typeof createServices>) => Promise<void>) {
    // Deliveries an earlier test's slow add left there would keep the new gate shut.
    await outbox().deleteMany({}); // what a worker's drain would do
    const fresh = createServices(stack.config, createLogger('silent', 'test'), 'producer');
    try {
      await fresh.redis.ping(); // connected: what a web process is before it listens
      await run(fresh);
    } finally {
      await fresh.close();
      await outbox().deleteMany({}); // what a worker's drain would do
    }
  }

  const deliver = (services: ReturnType<typeof createServices>, providerCallId: string) =>
    acceptDelivery(services, 'callEvent', a.slug, {
      firm: a.slug,
      event: 'call_started',
      call: { call_id: providerCallId, call_status: 'ongoing', direction: 'inbound' },
      received_at: Date.now(),
    });

  it('sends a burst of deliveries straight to the queue while it looks whether the outbox is empty', async () => {
    // A new web process first checks the outbox (it may hold deliveries from before). Before,
    // the deliveries that arrived during that check went to the outbox too, and reached the
    // queue only when a worker's drain moved them, a second or more later and after newer ones.
    await withNewProcess(async (fresh) => {
      const ids = Array.from({ length: 20 }, () => `burst_${rand()}`);
      const where = await Promise.all(ids.map((id) => deliver(fresh, id)));
      // Each one's add was made: its job is in the queue. One answered 'outbox' had an add slower
      // than ENQUEUE_TIMEOUT_MS (a loaded machine), which lands all the same; one held behind the
      // gate is kept in the outbox with no add at all, and no worker here moves it.
      await eventually(async () => {
        for (const id of ids) expect(await jobsOf(id), id).toHaveLength(1);
      });
      // Only those slow adds were kept.
      expect(await outbox().countDocuments({})).toBe(where.filter((w) => w === 'outbox').length);
    });
  });

  it('stays behind the outbox when the Redis connection drops while it looks', async () => {
    await withNewProcess(async (fresh) => {
      // The drop comes while the first delivery's look at the outbox is under way: what that
      // look saw (an empty outbox) says nothing of deliveries kept since, so the gate stays shut.
      const first = deliver(fresh, `drop_${rand()}`);
      fresh.redis.emit('close');
      expect(await first).toBe('outbox');
      expect(await deliver(fresh, `drop_${rand()}`)).toBe('outbox');
      expect(await outbox().countDocuments({ firm: a.slug })).toBe(2);
    });
  });
});
