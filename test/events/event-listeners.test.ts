// Who an event is for (docs/events.md#who-an-event-is-for): an event no endpoint takes and no
// workflow listens to is recorded and no more — no fan-out job — while one recorded as an
// endpoint is being made reaches that endpoint once it exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/table.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { eventually } from '../helpers/eventually.js';
import { eventsOf } from '../helpers/events.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js';

let stack: Stack;
let receiver: WebhookReceiver;
let n = 0;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startStack({ workers: true });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

/** A new number each call (a US number of the 212 area). */
const phone = () => `+1212555${String(2000 + ++n).padStart(4, '0')}`;

type Firm = Awaited<ReturnType<typeof createFirm>>;

async function listNumber(firm: Firm, number: string): Promise<string> {
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

describe('events nobody listens to', () => {
  it('have no fan-out job; an endpoint taking their type makes the next one delivered', async () => {
    const firm = await createFirm(stack);
    // No endpoint, no workflow: recorded, not fanned out.
    const unheard = await listNumber(firm, phone());
    expect(await fanoutJob(unheard)).toBeUndefined();
    // An endpoint of other types only: still nobody for dnc.added.
    const other = await firm.client.post('/api/webhook-endpoints', {
      firmSlug: firm.slug,
      url: receiver.url('/listeners-other'),
      events: ['lead.*'],
    });
    expect(other.status).toBe(200);
    expect(await fanoutJob(await listNumber(firm, phone()))).toBeUndefined();
    // One taking it: fanned out and delivered.
    const taker = await firm.client.post('/api/webhook-endpoints', {
      firmSlug: firm.slug,
      url: receiver.url('/listeners-taker'),
      events: ['dnc.*'],
    });
    expect(taker.status).toBe(200);
    const number = phone();
    const heard = await listNumber(firm, number);
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
    expect(await fanoutJob(await listNumber(firm, phone()))).toBeUndefined();
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
    const eventId = await listNumber(firm, number);
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
});
