// The writers of one webhook delivery's document take turns under its lock, each writing from a
// read inside it (core/domain/events/deliveries.ts): its job recording an attempt, and an
// operator's retry. FerretDB applies an update as a read and a write of the whole document, so a
// write from an earlier read could put `pending` back over a status another writer settled (and
// the delivery would be sent once more). No worker runs here: the test runs the delivery's job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deliveriesCollection,
  retryDelivery,
  runDelivery,
  sendPing,
  type DeliveryDoc,
} from '../../core/domain/events/deliveries.js';
import { findEndpoint } from '../../core/domain/events/endpoints.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js';
import { eventually } from '../helpers/eventually.js';
import { holdLock, landsWithin } from '../helpers/held-lock.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let receiver: WebhookReceiver;
let firm: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startStack({ env: { WEBHOOK_RETRY_SCHEDULE: '1m' } });
  firm = await createFirm(stack);
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

/** A pending ping delivery to a new endpoint at `path` (its job queued; no worker takes it). */
async function pendingDelivery(path: string): Promise<DeliveryDoc> {
  const res = await firm.client.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url: receiver.url(path),
    events: ['dnc.added'],
  });
  expect(res.status).toBe(200);
  const endpoint = await findEndpoint(stack.services.mongo.db, res.body.id);
  expect(endpoint).not.toBeNull();
  const d = await sendPing(stack.services, endpoint!);
  expect(d.status).toBe('pending');
  return d;
}

const stored = async (id: string) =>
  (await deliveriesCollection(stack.services.mongo.db).findOne({ _id: id }))!;

describe("a webhook delivery's writers", () => {
  it('an attempt that ends after another run settled the delivery joins its log, and the delivery stays settled', async () => {
    let answer!: () => void;
    let asked!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    const arrived = new Promise<void>((resolve) => (asked = resolve));
    receiver.answer = () => {
      asked();
      return { status: 500, until: held };
    };
    const d = await pendingDelivery('/late');
    const run = runDelivery(stack.services, { delivery: d._id, generation: 0 });
    await arrived;
    // Meanwhile another run of the delivery (a stalled job taken over) delivered it.
    const other = {
      at: new Date(),
      status_code: 200,
      duration_ms: 3,
      response_body: 'ok',
      error: null,
      next_retry_at: null,
    };
    await deliveriesCollection(stack.services.mongo.db).updateOne(
      { _id: d._id },
      { $set: { status: 'delivered', attempts: [other], next_attempt_at: null, settled_at: new Date() } },
    );
    answer();
    expect(await run).toEqual({ kind: 'done', status: 'delivered' });
    const after = await stored(d._id);
    expect(after.status).toBe('delivered');
    expect(after.next_attempt_at).toBeNull();
    expect(after.attempts.map((a) => a.status_code)).toEqual([200, 500]);
  });

  it("an operator's retry and the job's record of an attempt wait for the delivery's lock, then both stand", async () => {
    receiver.answer = () => ({ status: 200 });
    const d = await pendingDelivery('/turns');
    const lock = await holdLock(stack.services.redis, redisKeys(stack.config).webhookDeliveryLock(d._id));
    const run = runDelivery(stack.services, { delivery: d._id, generation: 0 });
    await eventually(async () => expect(receiver.at('/turns')).toHaveLength(1));
    const retry = retryDelivery(stack.services, d);
    // Unheld, each lands within milliseconds.
    expect(await landsWithin([run, retry], 1_500)).toBe('waiting');
    expect((await stored(d._id)).attempts).toHaveLength(0);
    await lock.release();
    // The job asked first, so it records first: delivered. The retry then reads the delivery
    // settled, and starts a new generation of it, as a retry of a settled delivery does.
    expect(await run).toEqual({ kind: 'done', status: 'delivered' });
    const retried = await retry;
    expect(retried).toMatchObject({ status: 'pending', generation: 1 });
    const after = await stored(d._id);
    expect(after).toMatchObject({ status: 'pending', generation: 1, failures: 0 });
    expect(after.attempts.map((a) => a.status_code)).toEqual([200]);
  });
});
