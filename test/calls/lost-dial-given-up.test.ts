// A place-call job that failed for good while its call stayed unfinished: its last attempt gives
// up by ending the call `dial_failed`, and here that end was never written (the store down at that
// moment, or a job given up as stalled, whose worker died at every try). The call stayed
// `registered` for ever: its campaign never completed. The lost-call sweep ends it now as that
// attempt would have, with the job's reason, and what follows a finished call. The calls queue is
// consumed here by a worker of the test's own that fails every place-call job for good, without
// touching the call, as such a run does; the stack's worker takes every other queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnrecoverableError, Worker } from 'bullmq';
import { sweepLostCalls } from '../../core/domain/calls/lost-calls.js';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { QUEUE, QUEUE_NAMES } from '../../jobs/queues.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { eventsOf } from '../helpers/events.js';
import { callsOf, createAgent, waitForCall } from './support.js';
import { createCampaign, launch, simulatorDials, usPhones, waitForCampaign } from '../campaigns/support.js';

const WHY = 'the store could not be reached';

let stack: Stack;
let connection: RedisClient;
let failing: Worker<unknown, unknown>;
beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: { WORKER_QUEUES: QUEUE_NAMES.filter((q) => q !== QUEUE.calls).join(',') },
  });
  connection = createRedis({ url: stack.env.REDIS_URL! }, 'worker');
  failing = new Worker<unknown, unknown>(
    QUEUE.calls,
    async () => {
      throw new UnrecoverableError(WHY);
    },
    { connection, prefix: redisKeys(stack.config).queuePrefix(QUEUE.calls) },
  );
});
afterAll(async () => {
  await failing?.close();
  connection?.disconnect();
  await stack?.stop();
});

const calls = () => stack.services.queues.calls;
const failedForGood = (callId: string) =>
  eventually(async () => expect(await calls().getJobState(callId)).toBe('failed'), 30_000);

describe('a call whose place-call job failed for good without ending it', () => {
  it('is ended dial_failed by the sweep with the job’s reason, its call.ended recorded, and left alone after', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const [to] = usPhones(1, 900);
    const res = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: to,
      agentId,
      firmSlug: firm.slug,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const callId = res.body.call_id as string;
    await failedForGood(callId);
    expect(await callsOf(stack).findOne({ _id: callId })).toMatchObject({
      status: 'registered',
      finished: false,
    });

    // Younger than the sweep's age: left as it is.
    const young = await sweepLostCalls(stack.services, { dialAfterMs: 60_000, endAfterMs: 3_600_000 });
    expect(young.dialsEnded).toBe(0);
    expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('registered');

    const swept = await sweepLostCalls(stack.services, { dialAfterMs: 0, endAfterMs: 3_600_000 });
    expect(swept).toMatchObject({ dialsEnded: 1, readded: 0 });
    const ended = await waitForCall(firm.client, callId, (c) => c.status === 'error', 10_000);
    expect(ended).toMatchObject({ disconnection_reason: 'dial_failed', outcome: 'not_connected' });
    expect((await callsOf(stack).findOne({ _id: callId }))?.error_message).toBe(
      `Gave up after 1 attempt: ${WHY}`,
    );
    // Its job is the one that failed, not added again; the call was never dialled.
    expect(await calls().getJobState(callId)).toBe('failed');
    expect(await simulatorDials(stack, [to!])).toEqual([]);
    // Its end was followed up as a finished call's is: call.ended recorded, once.
    const events = await eventsOf(stack, firm.slug, callId);
    expect(events.map((e) => e.type)).toEqual(['call.ended']);
    expect(events[0]!.data).toMatchObject({ call_id: callId, disconnection_reason: 'dial_failed' });
    // Finished: nothing more to do.
    const again = await sweepLostCalls(stack.services, { dialAfterMs: 0, endAfterMs: 3_600_000 });
    expect(again.dialsEnded).toBe(0);
  });

  it('settles its campaign lead, so the campaign completes', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const phones = usPhones(1, 920);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: phones.map((phone) => ({ phone })),
    });
    await launch(firm.client, created.id);
    const call = await eventually(async () => {
      const found = await callsOf(stack).findOne({ campaign_id: created.id });
      expect(found).not.toBeNull();
      return found!;
    }, 30_000);
    await failedForGood(call._id);
    // Held: its only lead's call never ends by itself.
    expect((await firm.client.get(`/api/leads/campaigns/${created.id}`)).body.status).toBe('running');

    expect((await sweepLostCalls(stack.services, { dialAfterMs: 0, endAfterMs: 3_600_000 })).dialsEnded).toBe(
      1,
    );
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_placed: 1, calls_failed: 1 });
    expect(await simulatorDials(stack, phones)).toEqual([]);
  });
});
