// An endpoint's health and its test pings (docs/events.md#endpoints): a ping is a test message of
// its own, never held behind an earlier ping still being retried; enabling an endpoint again
// starts its failing streak afresh, so failures from before it was disabled neither show as
// `failing_since` nor disable it at its first failure after; deleting it leaves no streak in Redis,
// not even one that an attempt under way at the delete begins; an answer whose body never ends is
// judged by its status, cut off at what the log keeps; an answer the store could not keep as it
// came (NUL) is recorded, not sent again and again.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { deliveriesCollection, deliveryIdOf } from '../../core/domain/events/deliveries.js';
import { clock } from '../../core/platform/clock.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebhookReceiver, type Answer, type WebhookReceiver } from '../fakes/webhook-receiver.js';

let stack: Stack;
let receiver: WebhookReceiver;
let firm: Awaited<ReturnType<typeof createFirm>>;
/** How each path of the receiver answers now (200 "ok" when unset). */
const answers = new Map<string, () => Answer>();

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  receiver.answer = (path) => answers.get(path)?.() ?? { status: 200, body: 'ok' };
  stack = await startStack({
    workers: true,
    env: { WEBHOOK_RETRY_SCHEDULE: '100ms', WEBHOOK_ORDER_WAIT_MS: '600000', WEBHOOK_TIMEOUT_MS: '3000' },
  });
  firm = await createFirm(stack);
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});
afterEach(() => clock.reset());

async function endpoint(url: string): Promise<string> {
  const res = await firm.client.post('/api/webhook-endpoints', { firmSlug: firm.slug, url, events: ['*'] });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

const ping = async (id: string) => {
  const res = await firm.client.post(`/api/webhook-endpoints/${id}/test`);
  expect(res.status).toBe(200);
  return res.body as { id: string; event_id: string };
};

const delivery = async (id: string, deliveryId: string) => {
  const res = await firm.client.get(`/api/webhook-endpoints/${id}/deliveries?limit=100`);
  expect(res.status).toBe(200);
  return (res.body.deliveries as Array<Record<string, any>>).find((d) => d.id === deliveryId)!;
};

it('a test ping goes at once while an earlier ping to the endpoint waits for its retry', async () => {
  let fixed = false;
  // Down, asking to be tried again in an hour; then fixed.
  answers.set('/pings', () =>
    fixed ? { status: 200 } : { status: 503, headers: { 'retry-after': '3600' } },
  );
  const id = await endpoint(receiver.url('/pings'));
  const first = await ping(id);
  await eventually(async () => expect((await delivery(id, first.id)).attempts).toHaveLength(1));
  fixed = true;
  const second = await ping(id);
  const got = await eventually(async () => {
    const accepted = receiver.accepted('/pings');
    expect(accepted).toHaveLength(1);
    return accepted[0]!;
  });
  expect(got.headers['webhook-id']).toBe(second.event_id);
  // Recorded once the receiver's answer is read, a moment after the receiver has it.
  await eventually(async () =>
    expect(await delivery(id, second.id)).toMatchObject({ status: 'delivered', out_of_order: false }),
  );
  // The first keeps its own retry time.
  expect(await delivery(id, first.id)).toMatchObject({ status: 'pending' });
});

it('enabling an endpoint again starts its failing streak afresh', async () => {
  answers.set('/streak', () => ({ status: 500 }));
  const id = await endpoint(receiver.url('/streak'));
  const first = await ping(id);
  await eventually(async () => expect((await delivery(id, first.id)).status).toBe('failed'));
  const read = async () => (await firm.client.get(`/api/webhook-endpoints/${id}`)).body;
  expect((await read()).failing_since).not.toBeNull();
  // Disabled by the firm while it fixes its receiver; enabled again a week later.
  expect((await firm.client.patch(`/api/webhook-endpoints/${id}`, { enabled: false })).status).toBe(200);
  clock.shift(7 * 86_400_000);
  const enabled = await firm.client.patch(`/api/webhook-endpoints/${id}`, { enabled: true });
  expect(enabled.body).toMatchObject({ enabled: true, failing_since: null });
  expect((await read()).failing_since).toBeNull();
  // Its first failure after: a streak of its own, not one 7 days long.
  const second = await ping(id);
  await eventually(async () => expect((await delivery(id, second.id)).attempts.length).toBeGreaterThan(0));
  // The streak is set just after the failed attempt is recorded: look until it shows.
  const after = await eventually(async () => {
    const now = await read();
    expect(now.failing_since).not.toBeNull();
    return now;
  });
  expect(after).toMatchObject({ enabled: true, disabled_reason: null });
  expect(Date.parse(after.failing_since)).toBeGreaterThanOrEqual(clock.now() - 60_000);
});

it('deleting an endpoint removes its failing streak from Redis', async () => {
  answers.set('/streak-deleted', () => ({ status: 500 }));
  const id = await endpoint(receiver.url('/streak-deleted'));
  const first = await ping(id);
  await eventually(async () => expect((await delivery(id, first.id)).status).toBe('failed'));
  const streak = redisKeys(stack.services.config).webhookFailingSince(id);
  expect(await stack.services.redis.exists(streak)).toBe(1);
  expect((await firm.client.delete(`/api/webhook-endpoints/${id}`)).body).toEqual({ id, deleted: true });
  expect(await stack.services.redis.exists(streak)).toBe(0);
});

it('an attempt under way as its endpoint is deleted leaves no failing streak behind', async () => {
  let arrived = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  // The receiver holds the ping until the endpoint is deleted, then fails it.
  answers.set('/streak-in-flight', () => {
    arrived = true;
    return { status: 500, until: released };
  });
  const id = await endpoint(receiver.url('/streak-in-flight'));
  const sent = await ping(id);
  await eventually(async () => expect(arrived).toBe(true));
  expect((await firm.client.delete(`/api/webhook-endpoints/${id}`)).body).toEqual({ id, deleted: true });
  release();
  // Its attempt recorded as failed (the streak's moment), then the delivery skipped as deleted.
  const recorded = await eventually(async () => {
    const d = await deliveriesCollection(stack.services.mongo.db).findOne({ _id: deliveryIdOf(sent.id)! });
    expect(d).toMatchObject({ status: 'skipped', reason: 'endpoint_deleted' });
    return d!;
  });
  expect(recorded.attempts.map((a) => a.status_code)).toEqual([500]);
  const streak = redisKeys(stack.services.config).webhookFailingSince(id);
  expect(await stack.services.redis.exists(streak)).toBe(0);
});

it('a 2xx whose body never ends is delivered, its first 2 KB kept', async () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const drip = setInterval(() => res.write('x'.repeat(1024)), 20);
      res.on('close', () => clearInterval(drip));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const id = await endpoint(`http://127.0.0.1:${(server.address() as AddressInfo).port}/stream`);
    const sent = await ping(id);
    const d = await eventually(async () => {
      const found = await delivery(id, sent.id);
      expect(found.attempts).toHaveLength(1);
      return found;
    });
    expect(d.status).toBe('delivered');
    expect(d.attempts[0]).toMatchObject({ status_code: 200, error: null });
    expect(d.attempts[0].response_body).toBe('x'.repeat(2048));
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

it('an answer holding the NUL character is recorded (as U+FFFD) and not sent again', async () => {
  answers.set('/nul', () => ({ status: 200, body: 'ok\u0000done' }));
  const id = await endpoint(receiver.url('/nul'));
  const sent = await ping(id);
  const d = await eventually(async () => {
    const found = await delivery(id, sent.id);
    expect(found.status).toBe('delivered');
    return found;
  });
  expect(d.attempts).toEqual([expect.objectContaining({ status_code: 200, response_body: 'ok\uFFFDdone' })]);
  expect(receiver.at('/nul')).toHaveLength(1);
});
