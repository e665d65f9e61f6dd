// A place-call job that failed for good while its call stayed unfinished: its last attempt gives
// up by ending the call `dial_failed`, and here that end was never written (the store down at that
// moment, or a job given up as stalled, whose worker died at every try). The call stayed
// `registered` for ever: its campaign never completed. The lost-call sweep ends it now as that
// attempt would have, with the job's reason, and what follows a finished call; a dial an attempt
// had marked is first looked for at Retell (list-calls by our call id, judged by Retell's own
// document in the fake), and one Retell has is left for the job's retry to take up. The calls
// queue is consumed here by a worker of the test's own that fails every place-call job for good
// without ending its call, as such a run does (marking the dial first for the numbers in
// `MARKS`); the stack's worker takes every other queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnrecoverableError, Worker } from 'bullmq';
import { sweepLostCalls } from '../../core/domain/calls/lost-calls.js';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { QUEUE, QUEUE_NAMES } from '../../jobs/queues.js';
import type { PlaceCallJob } from '../../jobs/calls.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { eventsOf } from '../helpers/events.js';
import { retellEnv, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { callsOf, createAgent, waitForCall } from './support.js';
import { createCampaign, launch, usPhones, waitForCampaign } from '../campaigns/support.js';

const WHY = 'the store could not be reached';
/** A direct sweep for lost dials only, of any age. */
const DIALS_NOW = { dialAfterMs: 0, endAfterMs: 3_600_000 };
/** Numbers whose job's attempt marks the dial (as one does before it asks Retell) before it fails. */
const MARKS = new Set<string>();

let fake: RetellFake;
let stack: Stack;
let connection: RedisClient;
let failing: Worker<PlaceCallJob, unknown>;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;
beforeAll(async () => {
  fake = await startRetellFake();
  stack = await startStack({
    workers: true,
    env: { ...retellEnv(fake), WORKER_QUEUES: QUEUE_NAMES.filter((q) => q !== QUEUE.calls).join(',') },
  });
  connection = createRedis({ url: stack.env.REDIS_URL! }, 'worker');
  failing = new Worker<PlaceCallJob, unknown>(
    QUEUE.calls,
    async (job) => {
      const call = await callsOf(stack).findOne({ _id: job.data.callId });
      if (call !== null && MARKS.has(call.to_number ?? '')) {
        await callsOf(stack).updateOne(
          { _id: call._id },
          { $set: { 'dial.state': 'running', 'dial.attempts': 1, 'dial.started_at': new Date() } },
        );
      }
      throw new UnrecoverableError(WHY);
    },
    { connection, prefix: redisKeys(stack.config).queuePrefix(QUEUE.calls) },
  );
  firm = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 5 });
  agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
});
afterAll(async () => {
  await failing?.close();
  connection?.disconnect();
  await stack?.stop();
  await fake?.close();
});

const calls = () => stack.services.queues.calls;
const dialsTo = (to: string) => fake.requestsTo('create-phone-call').filter((r) => r.body?.to_number === to);
const lookupsFor = (callId: string) =>
  fake.requestsTo('list-calls').filter((r) => JSON.stringify(r.body?.filter_criteria ?? {}).includes(callId));

/** A call made through create-outbound-call, once its place-call job has failed for good. */
async function givenUpCall(to: string): Promise<string> {
  const res = await firm.client.post('/api/v2/create-outbound-call', {
    toNumber: to,
    agentId,
    firmSlug: firm.slug,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const callId = res.body.call_id as string;
  await eventually(async () => expect(await calls().getJobState(callId)).toBe('failed'), 30_000);
  expect(await callsOf(stack).findOne({ _id: callId })).toMatchObject({
    status: 'registered',
    finished: false,
  });
  return callId;
}

describe('a call whose place-call job failed for good without ending it', () => {
  it('is ended dial_failed by the sweep with the job’s reason, its call.ended recorded, and left alone after', async () => {
    const [to] = usPhones(1, 900, '+1415');
    const callId = await givenUpCall(to!);

    // Younger than the sweep's age: left as it is.
    const young = await sweepLostCalls(stack.services, { dialAfterMs: 60_000, endAfterMs: 3_600_000 });
    expect(young.dialsEnded).toBe(0);
    expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('registered');

    const swept = await sweepLostCalls(stack.services, DIALS_NOW);
    expect(swept).toMatchObject({ dialsEnded: 1, readded: 0 });
    const ended = await waitForCall(firm.client, callId, (c) => c.status === 'error', 10_000);
    expect(ended).toMatchObject({ disconnection_reason: 'dial_failed', outcome: 'not_connected' });
    const stored = await callsOf(stack).findOne({ _id: callId });
    expect(stored?.error_message).toBe(
      `given_up: the job that places this call failed for good without ending it (${WHY}); it was not dialled`,
    );
    // Its dial settled: an attempt of the job taken up again finds nothing to mark.
    expect(stored?.dial).toMatchObject({ state: 'skipped', attempts: 0, result: { reason: 'given_up' } });
    // Never marked, so Retell was not asked for it; its job is the one that failed, not added again.
    expect(lookupsFor(callId)).toEqual([]);
    expect(await calls().getJobState(callId)).toBe('failed');
    expect(dialsTo(to!)).toEqual([]);
    // Its end was followed up as a finished call's is: call.ended recorded, once.
    const events = await eventsOf(stack, firm.slug, callId);
    expect(events.map((e) => e.type)).toEqual(['call.ended']);
    expect(events[0]!.data).toMatchObject({ call_id: callId, disconnection_reason: 'dial_failed' });
    // Finished: nothing more to do.
    expect((await sweepLostCalls(stack.services, DIALS_NOW)).dialsEnded).toBe(0);
  });

  it('with its dial marked, is looked for at Retell first: ended when Retell has no call of it, left when Retell has one', async () => {
    const [absentTo, presentTo] = usPhones(2, 940, '+1415');
    MARKS.add(absentTo!);
    MARKS.add(presentTo!);
    const absent = await givenUpCall(absentTo!);
    const present = await givenUpCall(presentTo!);
    // The marked attempt's request reached Retell for one of them before it died.
    fake.calls.push({
      call_id: `call_given_up_${present}`,
      call_type: 'phone_call',
      agent_id: 'oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD',
      agent_version: 1,
      call_status: 'registered',
      direction: 'outbound',
      from_number: '+14155550100',
      to_number: presentTo!,
      metadata: { call_id: present },
    });

    const swept = await sweepLostCalls(stack.services, DIALS_NOW);
    expect(swept).toMatchObject({ dialsEnded: 1, asked: 2 });
    for (const callId of [absent, present]) {
      const [lookup] = lookupsFor(callId);
      expect(lookup, `Retell asked for ${callId}`).toMatchObject({ method: 'POST', problems: [] });
    }
    const ended = await callsOf(stack).findOne({ _id: absent });
    expect(ended).toMatchObject({ status: 'error', disconnection_reason: 'dial_failed' });
    expect(ended?.dial).toMatchObject({ state: 'skipped', attempts: 1 });
    // The one at Retell stays for its job's retry, which finds it there and links it.
    expect(await callsOf(stack).findOne({ _id: present })).toMatchObject({
      status: 'registered',
      finished: false,
      dial: { state: 'running', attempts: 1 },
    });
    expect(dialsTo(absentTo!)).toEqual([]);
    expect(dialsTo(presentTo!)).toEqual([]);
  });

  it('settles its campaign lead, so the campaign completes', async () => {
    const phones = usPhones(1, 920, '+1415');
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
    await eventually(async () => expect(await calls().getJobState(call._id)).toBe('failed'), 30_000);
    // Held: its only lead's call never ends by itself.
    expect((await firm.client.get(`/api/leads/campaigns/${created.id}`)).body.status).toBe('running');

    expect((await sweepLostCalls(stack.services, DIALS_NOW)).dialsEnded).toBe(1);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_placed: 1, calls_failed: 1 });
    expect(dialsTo(phones[0]!)).toEqual([]);
  });
});
