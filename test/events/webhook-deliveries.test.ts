// Events out (docs/events.md): a do-not-call addition over the API records `dnc.added` events,
// and the worker delivers them to the firm's endpoints as the Standard Webhooks spec says,
// checked with the `standardwebhooks` library's own verifier. Retries on a schedule (seconds
// here), a manual retry, disabling, 410, secret rotation with both secrets valid for 24 h,
// replay with the original ids in order, the ping, the delivery log and the metrics; an event
// nobody listens to has no fan-out, and one recorded while an endpoint is being made reaches it.
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { deliveriesCollection, signedRequest } from '../../core/domain/events/deliveries.js';
import { enqueue } from '../../jobs/define.js';
import { CAPPED, CAPPED_ATTEMPTS } from '../../jobs/backoff.js';
import { JOBS } from '../../jobs/table.js';
import { deliverJobId } from '../../jobs/webhooks.js';
import { recordEvent } from '../../core/domain/events/record-event.js';
import { CACHE_COPY_MAX_AGE_MS } from '../../core/platform/cache-version.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { eventsOf } from '../helpers/events.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js';

let stack: Stack;
let receiver: WebhookReceiver;
let smtp: FakeSmtp;
let firm: Awaited<ReturnType<typeof createFirm>>;
let n = 0;

beforeAll(async () => {
  [receiver, smtp] = await Promise.all([startWebhookReceiver(), startFakeSmtp()]);
  stack = await startStack({
    workers: true,
    env: {
      WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms',
      WEBHOOK_ORDER_WAIT_MS: '60000',
      SMTP_URL: smtp.url,
    },
  });
  firm = await createFirm(stack, { notification_emails: ['ops@firm.example'] });
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  await smtp?.stop();
});
afterEach(() => clock.reset());

/** A new number each call (a US number of the 212 area). */
const phone = () => `+1212555${String(1000 + ++n).padStart(4, '0')}`;

async function endpoint(
  path: string,
  events: string[] = ['dnc.added'],
  client = firm.client,
  slug = firm.slug,
) {
  const res = await client.post('/api/webhook-endpoints', {
    firmSlug: slug,
    url: receiver.url(path),
    events,
  });
  expect(res.status).toBe(200);
  return res.body as { id: string; secret: string };
}

async function listNumbers(...phones: string[]) {
  const res = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones });
  expect(res.status).toBe(200);
}

/** The `i`-th accepted request at `path`, once it has arrived. */
const arrived = (path: string, i = 0) =>
  eventually(async () => {
    const r = receiver.accepted(path)[i];
    expect(r).toBeDefined();
    return r!;
  });

const deliveries = async (id: string) => {
  const res = await firm.client.get(`/api/webhook-endpoints/${id}/deliveries?limit=100`);
  expect(res.status).toBe(200);
  return res.body.deliveries as Array<Record<string, any>>;
};

describe('signed deliveries', () => {
  it('a receiver verifying with standardwebhooks accepts every delivery; a tampered body or an old timestamp is refused', async () => {
    const ep = await endpoint('/verify');
    const numbers = [phone(), phone(), phone()];
    await listNumbers(...numbers);
    const got = await eventually(async () => {
      const accepted = receiver.accepted('/verify');
      expect(accepted).toHaveLength(3);
      return accepted;
    });
    const wh = new Webhook(ep.secret);
    for (const r of got) {
      const payload = wh.verify(r.body, r.headers) as { type: string; timestamp: string; data: any };
      expect(Object.keys(payload)).toEqual(['type', 'timestamp', 'data']);
      expect(payload.type).toBe('dnc.added');
      expect(payload.data).toMatchObject({ firm: firm.slug, source: 'api' });
      expect(payload.timestamp).toBe(payload.data.added_at);
      // webhook-id is the event's id: derived from the change, the same on every attempt.
      expect(r.headers['webhook-id']).toMatch(/^evt_[a-z2-7]{26}$/);
      // Tampered body: refused.
      expect(() => wh.verify(r.body.replace('dnc.added', 'dnc.added '), r.headers)).toThrow();
      // Signed by the service's own signer, but 6 minutes ago: refused as too old.
      const old = signedRequest(
        [ep.secret],
        r.headers['webhook-id']!,
        payload.type,
        new Date(payload.timestamp),
        JSON.stringify(payload.data),
        new Date(Date.now() - 6 * 60_000),
      );
      expect(() => wh.verify(old.body, old.headers)).toThrow(/too old/i);
    }
    expect(new Set(got.map((r) => JSON.parse(r.body).data.phone))).toEqual(new Set(numbers));
    // The log: one delivered attempt each, with its status, duration and answer.
    const log = await eventually(async () => {
      const all = await deliveries(ep.id);
      expect(all.map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered']);
      return all;
    });
    for (const d of log) {
      expect(d).toMatchObject({ status: 'delivered', kind: 'event', type: 'dnc.added', out_of_order: false });
      expect(d.attempts).toHaveLength(1);
      expect(d.attempts[0]).toMatchObject({ status_code: 200, response_body: 'ok', error: null });
    }
    // Listing the same numbers again records no new event: nothing more is delivered.
    await listNumbers(...numbers);
    await listNumbers(phone());
    await eventually(async () => expect(receiver.accepted('/verify')).toHaveLength(4));
  });
});

/** Answers for the paths of this file: each test owns its paths. */
const answers = new Map<string, (n: number) => { status: number; headers?: Record<string, string> }>();
const served = new Map<string, number>();
beforeAll(() => {
  receiver.answer = (path) => {
    const count = (served.get(path) ?? 0) + 1;
    served.set(path, count);
    const answer = answers.get(path)?.(count);
    return answer === undefined
      ? { status: 200, body: 'ok' }
      : { ...answer, body: `answer ${answer.status}` };
  };
});

describe('the endpoints API', () => {
  it('creates an endpoint with a whsec_ secret shown once, stored sealed; lists and reads without it', async () => {
    const created = await firm.client.post('/api/webhook-endpoints', {
      firmSlug: firm.slug,
      url: receiver.url('/api'),
      events: ['call.*', 'lead.created', '*'],
      description: 'CRM',
    });
    expect(created.status).toBe(200);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(24);
    expect(created.body).toMatchObject({
      enabled: true,
      description: 'CRM',
      firm: firm.slug,
      disabled_reason: null,
    });
    const read = await firm.client.get(`/api/webhook-endpoints/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.secret).toBeUndefined();
    expect(read.text).not.toContain(created.body.secret.slice(6));
    const listed = await firm.client.get('/api/webhook-endpoints');
    expect(listed.body.endpoints.map((e: { id: string }) => e.id)).toContain(created.body.id);
    expect(listed.text).not.toContain(created.body.secret.slice(6));
    const raw = await stack.services.mongo.db
      .collection(COLLECTIONS.webhookEndpoints)
      .findOne({ _id: created.body.id });
    expect(JSON.stringify(raw)).not.toContain(created.body.secret.slice(6));
    const patched = await firm.client.patch(`/api/webhook-endpoints/${created.body.id}`, {
      description: null,
    });
    expect(patched.body.description).toBeNull();
    expect((await firm.client.delete(`/api/webhook-endpoints/${created.body.id}`)).body).toEqual({
      id: created.body.id,
      deleted: true,
    });
    expectError(
      await firm.client.get(`/api/webhook-endpoints/${created.body.id}`),
      404,
      'webhook_endpoint_not_found',
    );
  });

  it('refuses malformed bodies with a clear 400, another firm with 403/404, and a 21st endpoint with 409', async () => {
    const c = firm.client;
    const base = { firmSlug: firm.slug, url: receiver.url('/x'), events: ['dnc.added'] };
    const details = expectError(
      await c.post('/api/webhook-endpoints', {
        ...base,
        events: ['dnc.added', 'call.*', 'calls.*', 'lead.deleted'],
      }),
      400,
      'invalid_request',
    );
    expect(details.map((d) => d.path)).toEqual(['/events/2', '/events/3']);
    expectError(await c.post('/api/webhook-endpoints', { ...base, events: [] }), 400, 'invalid_request');
    expectError(
      await c.post('/api/webhook-endpoints', { ...base, url: { $ne: null } }),
      400,
      'invalid_request',
    );
    expectError(
      await c.post('/api/webhook-endpoints', { ...base, secret: 'whsec_mine' }),
      400,
      'invalid_request',
    );
    expectError(
      await c.post('/api/webhook-endpoints', { ...base, url: 'ftp://example.com/' }),
      400,
      'url_not_allowed',
    );
    expectError(
      await c.post('/api/webhook-endpoints', { ...base, url: 'not a url' }),
      400,
      'url_not_allowed',
    );
    const ep = await endpoint('/x');
    expectError(await c.patch(`/api/webhook-endpoints/${ep.id}`, {}), 400, 'invalid_request');
    expectError(await c.patch(`/api/webhook-endpoints/${ep.id}`, { enabled: 'yes' }), 400, 'invalid_request');
    expectError(
      await c.post(`/api/webhook-endpoints/${ep.id}/replay`, {
        from: '2026-01-02T00:00:00Z',
        to: '2026-01-01T00:00:00Z',
      }),
      400,
      'invalid_request',
    );
    expectError(
      await c.post(`/api/webhook-endpoints/${ep.id}/replay`, {
        from: 'yesterday',
        to: '2026-01-01T00:00:00Z',
      }),
      400,
      'invalid_request',
    );
    expectError(
      await c.post(`/api/webhook-endpoints/${ep.id}/deliveries/dlv_bm9uZQ/retry`),
      404,
      'delivery_not_found',
    );

    const other = await createFirm(stack);
    expectError(await other.client.post('/api/webhook-endpoints', base), 403, 'forbidden');
    for (const res of [
      await other.client.get(`/api/webhook-endpoints/${ep.id}`),
      await other.client.patch(`/api/webhook-endpoints/${ep.id}`, { enabled: false }),
      await other.client.get(`/api/webhook-endpoints/${ep.id}/deliveries`),
      await other.client.post(`/api/webhook-endpoints/${ep.id}/test`),
      await other.client.post(`/api/webhook-endpoints/${ep.id}/rotate-secret`),
      await other.client.post(`/api/webhook-endpoints/${ep.id}/replay`, {
        from: '2026-01-01T00:00:00Z',
        to: '2026-01-02T00:00:00Z',
      }),
      await other.client.delete(`/api/webhook-endpoints/${ep.id}`),
    ]) {
      expectError(res, 404, 'webhook_endpoint_not_found');
    }
    expect((await other.client.get('/api/webhook-endpoints')).body.endpoints).toEqual([]);

    for (let i = 0; i < 20; i++) await endpoint(`/limit-${i}`, ['dnc.added'], other.client, other.slug);
    expectError(
      await other.client.post('/api/webhook-endpoints', { ...base, firmSlug: other.slug }),
      409,
      'endpoint_limit_reached',
    );
  });
});

describe('retries', () => {
  it('retries a failed delivery on the schedule, honours Retry-After, and logs every attempt', async () => {
    answers.set('/flaky', (k) =>
      k === 1
        ? { status: 503, headers: { 'retry-after': '1' } }
        : k === 2
          ? { status: 500 }
          : { status: 200 },
    );
    const ep = await endpoint('/flaky');
    await listNumbers(phone());
    const [d] = await eventually(async () => {
      const log = await deliveries(ep.id);
      expect(log[0]?.status).toBe('delivered');
      return log;
    });
    expect(d!.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([503, 500, 200]);
    expect(d!.attempts[0].response_body).toBe('answer 503');
    const [first, second] = d!.attempts as Array<{ at: string; next_retry_at: string }>;
    // The 503 asked for 1 s: the retry came no sooner, though the schedule said 100 ms.
    expect(Date.parse(first!.next_retry_at) - Date.parse(first!.at)).toBeGreaterThanOrEqual(1000);
    expect(Date.parse(second!.at)).toBeGreaterThanOrEqual(Date.parse(first!.next_retry_at));
    expect(receiver.at('/flaky').map((r) => r.headers['webhook-id'])).toEqual(
      Array(3).fill(receiver.at('/flaky')[0]!.headers['webhook-id']),
    );
  });

  it("a delivery job failing on the service's own side is retried within seconds (capped backoff), not after a doubling wait", async () => {
    // A delivery whose record the job cannot write back (its attempts are not a list) fails on
    // our side after the send, as a MongoDB outage would make it fail.
    const ep = await endpoint('/own-failure');
    const now = new Date();
    const doc = {
      _id: `${ep.id}|own-failure|${now.getTime()}|ping_own_failure`,
      endpoint: ep.id,
      firm: firm.slug,
      kind: 'ping' as const,
      event_id: 'ping_own_failure',
      type: 'ping',
      subject: 'ping',
      occurred_at: now,
      data_json: '{}',
      status: 'pending' as const,
      reason: null,
      out_of_order: false,
      generation: 0,
      failures: 0,
      pending_since: now,
      next_attempt_at: now,
      attempts: null as unknown as [],
      created_at: now,
      settled_at: null,
    };
    await deliveriesCollection(stack.services.mongo.db).insertOne(doc);
    const job = { delivery: doc._id, generation: 0 };
    await enqueue(stack.services.queues, JOBS.webhookDeliver, job);
    const queue = stack.services.queues[JOBS.webhookDeliver.queue];
    const failed = await eventually(async () => {
      const found = await queue.getJob(deliverJobId(doc._id, 0));
      expect(found?.attemptsMade).toBeGreaterThanOrEqual(1);
      expect(await found?.isDelayed()).toBe(true);
      return found!;
    });
    await failed.remove();
    expect(failed.opts.backoff).toEqual({ type: CAPPED, delay: 1000 });
    expect(failed.opts.attempts).toBe(CAPPED_ATTEMPTS);
    // Its wait, from the workers' backoff strategy: the first retry's 1 s, jittered.
    expect(failed.delay).toBeGreaterThanOrEqual(500);
    expect(failed.delay).toBeLessThanOrEqual(1000);
    expect(receiver.at('/own-failure').length).toBeGreaterThanOrEqual(1);
  });

  it('gives a delivery up after the last retry; a manual retry sends it again', async () => {
    let fixed = false;
    answers.set('/down', () => (fixed ? { status: 200 } : { status: 500 }));
    const ep = await endpoint('/down');
    await listNumbers(phone());
    const [d] = await eventually(async () => {
      const log = await deliveries(ep.id);
      expect(log[0]?.status).toBe('failed');
      return log;
    });
    expect(d).toMatchObject({ reason: 'retries_exhausted', next_attempt_at: null });
    expect(d!.attempts).toHaveLength(4);
    fixed = true;
    const retried = await firm.client.post(`/api/webhook-endpoints/${ep.id}/deliveries/${d!.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body.status).toBe('pending');
    await eventually(async () => expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'delivered' }));
    expect(receiver.accepted('/down')).toHaveLength(1);
    const metrics = await stack.api.get('/metrics');
    for (const outcome of ['delivered', 'retrying', 'failed'])
      expect(metrics.text).toMatch(
        new RegExp(`webhook_delivery_attempts_total\\{outcome="${outcome}"\\} [1-9]`),
      );
  });

  it('an endpoint failing every attempt for WEBHOOK_DISABLE_AFTER_MS (5 days) is disabled and the firm mailed', async () => {
    answers.set('/dead', () => ({ status: 500 }));
    const ep = await endpoint('/dead');
    await listNumbers(phone());
    await eventually(async () => expect((await deliveries(ep.id))[0]?.status).toBe('failed'));
    expect((await firm.client.get(`/api/webhook-endpoints/${ep.id}`)).body.failing_since).not.toBeNull();
    clock.shift(5 * 86_400_000 + 60_000);
    await listNumbers(phone());
    await eventually(async () =>
      expect((await firm.client.get(`/api/webhook-endpoints/${ep.id}`)).body).toMatchObject({
        enabled: false,
        disabled_reason: 'failing',
      }),
    );
    const mail = await eventually(async () => {
      const found = smtp.messages.find((m) => m.raw.includes(ep.id));
      expect(found).toBeDefined();
      return found!;
    });
    expect(mail.to).toEqual(['ops@firm.example']);
  });
});

describe('disable, 410, rotation, replay, ping', () => {
  it('sends nothing to a disabled endpoint, and again once it is enabled', async () => {
    const witness = await endpoint('/witness-1');
    const ep = await endpoint('/off');
    expect(
      (await firm.client.patch(`/api/webhook-endpoints/${ep.id}`, { enabled: false })).body,
    ).toMatchObject({
      enabled: false,
      disabled_reason: 'manual',
    });
    expectError(await firm.client.post(`/api/webhook-endpoints/${ep.id}/test`), 409, 'endpoint_disabled');
    await listNumbers(phone());
    // The witness got it: the event's fan-out is done, and made no delivery for the disabled one.
    await eventually(async () => expect(receiver.accepted('/witness-1')).toHaveLength(1));
    expect(await deliveries(ep.id)).toEqual([]);
    await firm.client.patch(`/api/webhook-endpoints/${ep.id}`, { enabled: true });
    await listNumbers(phone());
    await eventually(async () => expect(receiver.accepted('/off')).toHaveLength(1));
    expect(receiver.at('/off')).toHaveLength(1);
    void witness;
  });

  it('a 410 disables the endpoint at once', async () => {
    answers.set('/gone', () => ({ status: 410 }));
    const ep = await endpoint('/gone');
    await listNumbers(phone());
    await eventually(async () =>
      expect((await firm.client.get(`/api/webhook-endpoints/${ep.id}`)).body).toMatchObject({
        enabled: false,
        disabled_reason: 'gone',
      }),
    );
    expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'failed', reason: 'gone' });
    expect(receiver.at('/gone')).toHaveLength(1);
  });

  it('two rotations at once: each secret shown signs (the second keeps the first beside it)', async () => {
    const ep = await endpoint('/rotate-twice');
    const [a, b] = await Promise.all([
      firm.client.post(`/api/webhook-endpoints/${ep.id}/rotate-secret`),
      firm.client.post(`/api/webhook-endpoints/${ep.id}/rotate-secret`),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    await listNumbers(phone());
    const got = await arrived('/rotate-twice', 0);
    // The last rotation's secret and the one before it: both shown, both verify; the first is gone.
    const verifies = (secret: string) => {
      try {
        return Boolean(new Webhook(secret).verify(got.body, got.headers));
      } catch {
        return false;
      }
    };
    expect([verifies(a.body.secret), verifies(b.body.secret), verifies(ep.secret)]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('after a rotation both secrets verify for 24 h, then only the new one', async () => {
    const ep = await endpoint('/rotate');
    const rotated = await firm.client.post(`/api/webhook-endpoints/${ep.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(ep.secret);
    expect(Date.parse(rotated.body.previous_secret_valid_until) - clock.now()).toBeGreaterThan(
      23 * 3_600_000,
    );
    const [oldWh, newWh] = [new Webhook(ep.secret), new Webhook(rotated.body.secret)];
    await listNumbers(phone());
    const first = await arrived('/rotate', 0);
    expect(first.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(oldWh.verify(first.body, first.headers)).toBeTruthy();
    expect(newWh.verify(first.body, first.headers)).toBeTruthy();
    clock.shift(24 * 3_600_000 + 60_000);
    expect(
      (await firm.client.get(`/api/webhook-endpoints/${ep.id}`)).body.previous_secret_valid_until,
    ).toBeNull();
    await listNumbers(phone());
    const second = await arrived('/rotate', 1);
    expect(second.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(newWh.verify(second.body, second.headers)).toBeTruthy();
    expect(() => oldWh.verify(second.body, second.headers)).toThrow();
  });

  it('an event recorded again after an endpoint was made is not sent to it; the next event is', async () => {
    const own = await createFirm(stack);
    const record = (key: string) =>
      recordEvent(stack.services, {
        firm: own.slug,
        type: 'lead.updated',
        subject: 'lead_before',
        key,
        occurred_at: new Date(),
        data: { id: 'lead_before', key },
      });
    // Recorded with nobody listening (no fan-out), then the endpoint made past the clocks' margin.
    const before = await record('before');
    await new Promise((r) => setTimeout(r, 2500));
    const ep = await endpoint('/after-the-event', ['lead.*'], own.client, own.slug);
    // A retried step records it again: its fan-out runs now, with the new endpoint listening.
    expect(await record('before')).toBe(before);
    const after = await record('after');
    await eventually(async () => {
      const job = await stack.services.queues.webhooks.getJob(`fanout|${before}`);
      expect(await job?.getState()).toBe('completed');
      expect(receiver.accepted('/after-the-event')).toHaveLength(1);
    });
    expect(receiver.at('/after-the-event').map((r) => r.headers['webhook-id'])).toEqual([after]);
    // A first attempt made by the fan-out is recorded once its answer is read, a moment after the
    // receiver has it: look until it is.
    await eventually(async () => {
      const res = await own.client.get(`/api/webhook-endpoints/${ep.id}/deliveries?limit=100`);
      expect(res.body.deliveries.map((d: any) => d.event_id)).toEqual([after]);
    });
  });

  it('replays the events of a window in order, with their original ids', async () => {
    const early = await endpoint('/first-sight', ['lead.*']);
    // Within the ordering bound (WEBHOOK_ORDER_WAIT_MS, 60 s here): the bound counts from an earlier
    // event's own time, so events dated further back than it are not held for each other.
    const t0 = Date.now() - 10_000;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(
        await recordEvent(stack.services, {
          firm: firm.slug,
          type: i === 0 ? 'lead.created' : 'lead.updated',
          subject: 'lead_replayed',
          key: `v${i}`,
          occurred_at: new Date(t0 + i * 1000),
          data: { id: 'lead_replayed', version: i },
        }),
      );
    }
    await eventually(async () => expect(receiver.accepted('/first-sight')).toHaveLength(4));
    expect(receiver.accepted('/first-sight').map((r) => r.headers['webhook-id'])).toEqual(ids);
    const late = await endpoint('/late', ['lead.updated']);
    const res = await firm.client.post(`/api/webhook-endpoints/${late.id}/replay`, {
      from: new Date(t0 + 500).toISOString(),
      to: new Date(t0 + 3500).toISOString(),
    });
    expect(res.status).toBe(200);
    expect(res.body.replay_id).toMatch(/^rpl_/);
    const got = await eventually(async () => {
      const accepted = receiver.accepted('/late');
      expect(accepted).toHaveLength(3);
      return accepted;
    });
    expect(got.map((r) => r.headers['webhook-id'])).toEqual(ids.slice(1));
    expect(got.map((r) => JSON.parse(r.body).data.version)).toEqual([1, 2, 3]);
    const wh = new Webhook(late.secret);
    for (const r of got) expect(wh.verify(r.body, r.headers)).toBeTruthy();
    expect((await deliveries(late.id)).every((d) => d.kind === 'replay')).toBe(true);
    void early;
  });

  it('POST …/test sends a signed ping', async () => {
    const ep = await endpoint('/ping');
    const res = await firm.client.post(`/api/webhook-endpoints/${ep.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: 'ping', type: 'ping', status: 'pending' });
    const ping = await arrived('/ping', 0);
    const payload = new Webhook(ep.secret).verify(ping.body, ping.headers) as { type: string; data: any };
    expect(payload.type).toBe('ping');
    expect(payload.data.endpoint_id).toBe(ep.id);
    expect(ping.headers['webhook-id']).toBe(res.body.event_id);
  });
});

// Who an event is for (docs/events.md#who-an-event-is-for): an event no endpoint takes and no
// workflow listens to is recorded and no more (no fan-out job), while one recorded as an endpoint
// is being made reaches that endpoint once it exists.
type Firm = Awaited<ReturnType<typeof createFirm>>;

async function listedEvent(firm: Firm, number: string): Promise<string> {
  const res = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [number] });
  expect(res.status).toBe(200);
  // dnc.added is recorded by the addition's sweep job, which adds its fan-out (if any) before it
  // ends: once no sweep is left to run, the event and its fan-out are there or never will be.
  const sweeps = stack.services.queues[JOBS.dncSweep.queue];
  return eventually(async () => {
    const left = await sweeps.getJobs(['active', 'waiting', 'delayed', 'prioritized']);
    expect(left.filter((j) => j.name === JOBS.dncSweep.name)).toEqual([]);
    const events = await eventsOf(stack, firm.slug);
    const event = events.find((e) => e.type === 'dnc.added' && e.data.phone === number);
    expect(event).toBeDefined();
    return event!.id;
  });
}

const fanoutJob = (eventId: string) =>
  stack.services.queues[JOBS.webhookFanout.queue].getJob(JOBS.webhookFanout.id!({ eventId }));

describe('who an event is for', () => {
  it('have no fan-out job; an endpoint taking their type makes the next one delivered', async () => {
    const firm = await createFirm(stack);
    // No endpoint, no workflow: recorded, not fanned out.
    const unheard = await listedEvent(firm, phone());
    expect(await fanoutJob(unheard)).toBeUndefined();
    // An endpoint of other types only: still nobody for dnc.added.
    const other = await firm.client.post('/api/webhook-endpoints', {
      firmSlug: firm.slug,
      url: receiver.url('/listeners-other'),
      events: ['lead.*'],
    });
    expect(other.status).toBe(200);
    expect(await fanoutJob(await listedEvent(firm, phone()))).toBeUndefined();
    // One taking it: fanned out and delivered.
    const taker = await firm.client.post('/api/webhook-endpoints', {
      firmSlug: firm.slug,
      url: receiver.url('/listeners-taker'),
      events: ['dnc.*'],
    });
    expect(taker.status).toBe(200);
    const number = phone();
    const heard = await listedEvent(firm, number);
    expect(await fanoutJob(heard)).toBeDefined();
    const [got] = await eventually(async () => {
      const accepted = receiver.accepted('/listeners-taker');
      expect(accepted).toHaveLength(1);
      return accepted;
    });
    expect(got!.headers['webhook-id']).toBe(heard);
    expect(JSON.parse(got!.body).data.phone).toBe(number);
    // Disabled again: its events are nobody's once more.
    const patched = await firm.client.patch(`/api/webhook-endpoints/${taker.body.id}`, { enabled: false });
    expect(patched.status).toBe(200);
    expect(await fanoutJob(await listedEvent(firm, phone()))).toBeUndefined();
    expect(receiver.accepted('/listeners-other')).toHaveLength(0);
  });

  it('an event recorded while an endpoint is being made reaches it', async () => {
    const firm = await createFirm(stack);
    const keys = redisKeys(stack.services.config);
    const redis = stack.services.redis;
    // The creation waits on the firm's endpoints lock, held here: it has begun, nothing is stored.
    const lock = keys.webhookEndpointsLock(firm.slug);
    expect(await redis.set(lock, 'held-by-the-test', 'PX', 20_000, 'NX')).toBe('OK');
    const creating = firm.client.post('/api/webhook-endpoints', {
      firmSlug: firm.slug,
      url: receiver.url('/listeners-while-made'),
      events: ['dnc.added'],
    });
    await eventually(async () => expect(await redis.zcard(keys.eventsListenersChanging(firm.slug))).toBe(1));
    const number = phone();
    const eventId = await listedEvent(firm, number);
    // Its fan-out waits, parked, for the creation to end.
    await eventually(async () => expect(await (await fanoutJob(eventId))?.isDelayed()).toBe(true));
    expect(await redis.del(lock)).toBe(1);
    const created = await creating;
    expect(created.status).toBe(200);
    const [got] = await eventually(async () => {
      const accepted = receiver.accepted('/listeners-while-made');
      expect(accepted).toHaveLength(1);
      return accepted;
    });
    expect(got!.headers['webhook-id']).toBe(eventId);
    expect(JSON.parse(got!.body).data.phone).toBe(number);
    expect(await redis.zcard(keys.eventsListenersChanging(firm.slug))).toBe(0);
  });

  it("an endpoint made after Redis lost the endpoints' cache version gets the next event", async () => {
    const firm = await createFirm(stack);
    await endpoint('/version-first', ['dnc.added'], firm.client, firm.slug);
    // Delivered: the worker keeps the firm's endpoints under the version of now.
    await listedEvent(firm, phone());
    await eventually(async () => expect(receiver.accepted('/version-first')).toHaveLength(1));
    // Redis lost it (a restart without persistence), then a second endpoint is made.
    const version = redisKeys(stack.services.config).webhookEndpointsVersion(firm.slug);
    expect(await stack.services.redis.del(version)).toBe(1);
    await endpoint('/version-second', ['dnc.added'], firm.client, firm.slug);
    const number = phone();
    const eventId = await listedEvent(firm, number);
    await eventually(async () => expect(receiver.accepted('/version-first')).toHaveLength(2));
    const [got] = await eventually(async () => {
      const accepted = receiver.accepted('/version-second');
      expect(accepted).toHaveLength(1);
      return accepted;
    });
    expect(got!.headers['webhook-id']).toBe(eventId);
    expect(JSON.parse(got!.body).data.phone).toBe(number);
    // An earlier release's bump (INCR) still works on it, during a rolling deploy.
    const before = await stack.services.redis.get(version);
    await stack.services.redis.incr(version);
    expect(await stack.services.redis.get(version)).toBe(String(BigInt(before!) + 1n));
  });

  it("an endpoint made after Redis lost the firm's listeners epoch gets the next event", async () => {
    const firm = await createFirm(stack);
    await endpoint('/epoch-other', ['lead.*'], firm.client, firm.slug);
    // Nobody takes dnc.added: not fanned out; the process keeps the firm's listeners under the
    // epoch of now.
    expect(await fanoutJob(await listedEvent(firm, phone()))).toBeUndefined();
    // Redis lost the epoch (a restart without persistence), then an endpoint taking it is made.
    const epoch = redisKeys(stack.services.config).eventsListenersEpoch(firm.slug);
    expect(await stack.services.redis.del(epoch)).toBe(1);
    await endpoint('/epoch-taker', ['dnc.*'], firm.client, firm.slug);
    const eventId = await listedEvent(firm, phone());
    expect(await fanoutJob(eventId)).toBeDefined();
    const [got] = await eventually(async () => {
      const accepted = receiver.accepted('/epoch-taker');
      expect(accepted).toHaveLength(1);
      return accepted;
    });
    expect(got!.headers['webhook-id']).toBe(eventId);
    // An earlier release's change (INCR) still works on it, during a rolling deploy.
    const before = await stack.services.redis.get(epoch);
    await stack.services.redis.incr(epoch);
    expect(await stack.services.redis.get(epoch)).toBe(String(BigInt(before!) + 1n));
  });

  it('an endpoint made while Redis lost the change of version reaches the events of a minute later', async () => {
    const firm = await createFirm(stack);
    await endpoint('/bound-first', ['dnc.added'], firm.client, firm.slug);
    // Delivered: the worker keeps the firm's endpoints under the version of now.
    await listedEvent(firm, phone());
    await eventually(async () => expect(receiver.accepted('/bound-first')).toHaveLength(1));
    const version = redisKeys(stack.services.config).webhookEndpointsVersion(firm.slug);
    const before = await stack.services.redis.get(version);
    await endpoint('/bound-second', ['dnc.added'], firm.client, firm.slug);
    // A failover to a replica that lacks the creation's bump: the version from before it is back.
    await stack.services.redis.set(version, before!);
    clock.shift(CACHE_COPY_MAX_AGE_MS + 1000);
    const eventId = await listedEvent(firm, phone());
    await eventually(async () => expect(receiver.accepted('/bound-first')).toHaveLength(2));
    const [got] = await eventually(async () => {
      const accepted = receiver.accepted('/bound-second');
      expect(accepted).toHaveLength(1);
      return accepted;
    });
    expect(got!.headers['webhook-id']).toBe(eventId);
  });
});
