// A lost dial: an outbound call acknowledged (or half made) whose place-call job is gone from Redis
// before it dialled (a failover's lost writes, a web process dying between the call's insert and
// its job's add). It used to stay `registered` for ever. The sweep (maintenance, every
// LOST_CALL_SWEEP_MS) adds its job again, marked lost: a call whose request would name it again on
// a repeat (an Idempotency-Key, a campaign's derived id) is placed; any other ends `error` /
// `dial_failed` undialled, since its client may have asked again without a key and had another.
// The calls queue is held here (BullMQ's queue pause) so that a call exists undialled while its
// job is taken away, as the failover takes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { sweepLostCalls } from '../../core/domain/calls/lost-calls.js';
import { LOST_DIAL_MESSAGE } from '../../core/domain/calls/call-dialing.js';
import { SWEEP_LOST_CALLS } from '../../workers/processors/maintenance.js';
import { JOBS } from '../../jobs/table.js';
import { analysisDigest } from '../../jobs/call-analysis.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { callsOf, createAgent, waitForCall } from './support.js';
import {
  campaignCalls,
  createCampaign,
  launch,
  simulatorDials,
  usPhones,
  waitForCampaign,
} from '../campaigns/support.js';

const SWEEP_MS = 1000;
const SIM_CALL_MS = 200;
// The worker's own sweep takes only calls this old: the tests' calls are younger unless one is
// made to look older, so the direct sweeps below are the only ones that see them.
const AFTER_MS = 120_000;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: {
      SIM_CALL_MS: String(SIM_CALL_MS),
      LOST_CALL_SWEEP_MS: String(SWEEP_MS),
      LOST_DIAL_AFTER_MS: String(AFTER_MS),
    },
  });
});
afterAll(async () => {
  await stack?.services.queues.calls.resume();
  await stack?.stop();
});

const calls = () => stack.services.queues.calls;
/** A direct sweep for lost dials only: no dialled call of these tests is old enough to be asked about. */
const dialsOlderThan = (dialAfterMs: number) => ({ dialAfterMs, endAfterMs: 3_600_000 });
/** A direct sweep for the ended calls of the last hour only (and no dialled call still on). */
const ENDED_ONLY = { dialAfterMs: 3_600_000, endAfterMs: 0, analysisWindowMs: 3_600_000 };

/** Takes the call's place-call job out of Redis, as a failover that lost its add would. */
async function lose(callId: string): Promise<void> {
  const job = await calls().getJob(callId);
  expect(job, `the place-call job of ${callId}`).toBeDefined();
  await job!.remove();
  expect(await calls().getJobState(callId)).toBe('unknown');
}

async function createCall(
  firm: Awaited<ReturnType<typeof createFirm>>,
  agentId: string,
  toNumber: string,
  headers?: Record<string, string>,
): Promise<string> {
  const res = await firm.client.post(
    '/api/v2/create-outbound-call',
    { toNumber, agentId, firmSlug: firm.slug },
    headers,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.call_id as string;
}

describe('a call whose place-call job was lost before its dial', () => {
  it('is placed when its request was keyed, ended dial_failed undialled when not, and a call with its job is left alone', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const [keyedTo, unkeyedTo, keptTo] = usPhones(3, 800);
    await calls().pause();
    const keyed = await createCall(firm, agentId, keyedTo!, { 'Idempotency-Key': `lost-${firm.slug}` });
    const unkeyed = await createCall(firm, agentId, unkeyedTo!);
    const kept = await createCall(firm, agentId, keptTo!);
    await lose(keyed);
    await lose(unkeyed);

    // Younger than the sweep's age: possibly a request still between its insert and its add.
    await sweepLostCalls(stack.services, dialsOlderThan(60_000));
    expect(await calls().getJobState(keyed)).toBe('unknown');
    expect(await calls().getJobState(unkeyed)).toBe('unknown');

    const swept = await sweepLostCalls(stack.services, dialsOlderThan(0));
    expect(swept.readded).toBe(2);
    expect((await calls().getJob(keyed))?.data).toEqual({ callId: keyed, firm: firm.slug, lost: true });
    expect((await calls().getJob(unkeyed))?.data).toEqual({ callId: unkeyed, firm: firm.slug, lost: true });
    // The call whose job is there keeps it as it was.
    expect((await calls().getJob(kept))?.data).toEqual({ callId: kept, firm: firm.slug });
    await calls().resume();

    const placed = await waitForCall(firm.client, keyed, (c) => c.status === 'ended', 30_000);
    expect(placed.disconnection_reason).not.toBe('dial_failed');
    await waitForCall(firm.client, kept, (c) => c.status === 'ended', 30_000);
    const ended = await waitForCall(firm.client, unkeyed, (c) => c.status === 'error', 30_000);
    expect(ended).toMatchObject({ disconnection_reason: 'dial_failed', outcome: 'not_connected' });
    expect((await callsOf(stack).findOne({ _id: unkeyed }))?.error_message).toBe(LOST_DIAL_MESSAGE);

    const dials = await simulatorDials(stack, [keyedTo!, unkeyedTo!, keptTo!]);
    expect(dials.map((d) => d.to_number).sort()).toEqual([keyedTo, keptTo].sort());
    // Its end freed its dial slot and recorded call.ended: list-calls shows it with the others.
    const listed = await firm.client.post('/api/v2/list-calls', { firmSlug: firm.slug });
    expect(listed.body.calls.map((c: { call_id: string }) => c.call_id).sort()).toEqual(
      [keyed, unkeyed, kept].sort(),
    );
    // Nothing left to sweep: every call has finished.
    expect((await sweepLostCalls(stack.services, dialsOlderThan(0))).readded).toBe(0);
  });

  it('is placed when it is a campaign call (its id derived from the lead), and the campaign completes', async () => {
    const firm = await createFirm(stack, { max_concurrent_calls: 5 });
    const agentId = await createAgent(firm.client, firm.slug);
    const phones = usPhones(1, 820);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: phones.map((phone) => ({ phone })),
    });
    await calls().pause();
    await launch(firm.client, created.id);
    const [call] = await eventually(async () => {
      const found = await campaignCalls(stack, created.id);
      expect(found).toHaveLength(1);
      return found;
    }, 30_000);
    expect(call!.repeatable).toBe(true);
    await lose(call!._id);

    expect((await sweepLostCalls(stack.services, dialsOlderThan(0))).readded).toBe(1);
    await calls().resume();
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_placed: 1, calls_completed: 1, calls_failed: 0 });
    expect((await simulatorDials(stack, phones)).map((d) => d.metadata.call_id)).toEqual([call!._id]);
  });

  it('goes on when it was dialled and its simulator step was lost: the sweep asks the simulator, which plays it on', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const [to] = usPhones(1, 860);
    const simulator = stack.services.queues.simulator;
    await simulator.pause();
    let callId: string;
    try {
      callId = await createCall(firm, agentId, to!);
      const stepId = JOBS.simulatorStep.id!({ callId, providerCallId: '' });
      // Due in SIM_CALL_MS / 2: delayed, or waiting in the paused queue once due.
      await eventually(
        async () => expect(['delayed', 'waiting', 'paused']).toContain(await simulator.getJobState(stepId)),
        30_000,
      );
      await (await simulator.getJob(stepId))!.remove();
    } finally {
      await simulator.resume();
    }
    // Dialled (its provider id is stored after the simulator has scheduled its step, so it can
    // come after the step was seen), and nothing more will come of it by itself.
    await sleep(SIM_CALL_MS * 4);
    await eventually(async () =>
      expect(await callsOf(stack).findOne({ _id: callId })).toMatchObject({
        status: 'registered',
        provider_call_id: expect.any(String),
      }),
    );

    // Younger than LOST_END_AFTER_MS: not asked about.
    expect(
      (await sweepLostCalls(stack.services, { dialAfterMs: 3_600_000, endAfterMs: 3_600_000 })).asked,
    ).toBe(0);
    const swept = await sweepLostCalls(stack.services, { dialAfterMs: 3_600_000, endAfterMs: 0 });
    expect(swept.asked).toBe(1);
    const ended = await waitForCall(firm.client, callId, (c) => c.status === 'ended', 30_000);
    expect(ended.transcript).toEqual(expect.any(String));
    expect(await simulatorDials(stack, [to!])).toHaveLength(1);
  });

  it('an ended conversation whose analyze-call job was lost has it run again, and makes its lead', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const [to] = usPhones(1, 880);
    const effects = stack.services.queues['call-effects'];
    await effects.pause();
    let callId: string;
    try {
      callId = await createCall(firm, agentId, to!);
      // Ended and analysed; its pipeline's first job waits in the held queue. Its id is the one
      // the sweep works out from the stored call (the analysis digest of what was stored).
      const analysed = await eventually(async () => {
        const doc = await callsOf(stack).findOne({ _id: callId });
        expect(doc?.call_analysis).not.toBeNull();
        const job = await effects.getJob(
          JOBS.analyzeCall.id!({ firm: firm.slug, callId, analysis: analysisDigest(doc!) }),
        );
        expect(job).toBeDefined();
        return job!;
      }, 30_000);
      // Waiting in its queue, it carries the call: nothing to run again.
      expect((await sweepLostCalls(stack.services, ENDED_ONLY)).reanalysed).toBe(0);
      await analysed.remove();
    } finally {
      await effects.resume();
    }
    await sleep(SIM_CALL_MS * 2);
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body).toMatchObject({
      status: 'ended',
      lead_id: null,
      effects: { lead: 'pending' },
    });

    // Ended less than LOST_END_AFTER_MS ago: not looked at.
    const young = await sweepLostCalls(stack.services, { ...ENDED_ONLY, endAfterMs: 3_600_000 });
    expect(young.reanalysed).toBe(0);
    // Each pass takes up where the firm's last one got to, less its window: a call that ended
    // before that is not looked at again; one after it is, however long ago the last pass was.
    const endedAt = (await callsOf(stack).findOne({ _id: callId }))!.end_timestamp!;
    const place = (endedUntil: number) =>
      stack.services.mongo.db
        .collection<{ _id: string; ended_until: number }>(COLLECTIONS.lostCallSweeps)
        .updateOne({ _id: firm.slug }, { $set: { ended_until: endedUntil } }, { upsert: true });
    const narrow = { ...ENDED_ONLY, analysisWindowMs: 1000 };
    // The worker's own sweep (every second here) keeps the firm's place too, with a `$max` that
    // FerretDB applies as a read and a write: one that read before the `$set` below and wrote
    // after it would put back a later place, and the direct sweep would not reach the call. So
    // the maintenance queue is held, its running sweep let finish, while the place is set by hand.
    const maintenance = stack.services.queues.maintenance;
    await maintenance.pause();
    let swept: Awaited<ReturnType<typeof sweepLostCalls>>;
    try {
      await eventually(async () => expect(await maintenance.getActiveCount()).toBe(0), 10_000);
      await place(endedAt + 1001);
      expect((await sweepLostCalls(stack.services, narrow)).reanalysed).toBe(0);
      await place(endedAt - 1);
      swept = await sweepLostCalls(stack.services, narrow);
    } finally {
      await maintenance.resume();
    }
    expect(swept.reanalysed).toBe(1);
    const ended = await waitForCall(firm.client, callId, (c) => c.lead_id !== null, 30_000);
    expect(ended.effects.lead).toBe('done');
    // Settled: the next pass leaves it.
    expect((await sweepLostCalls(stack.services, ENDED_ONLY)).reanalysed).toBe(0);
  });

  it('an ended call whose call_analyzed event was lost is asked about, and its analysis makes its lead', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const [to] = usPhones(1, 890);
    const events = stack.services.queues['call-events'];
    await events.pause();
    let callId: string;
    try {
      callId = await createCall(firm, agentId, to!);
      const analyzed = await eventually(async () => {
        const held = await events.getJobs(['waiting', 'delayed']);
        const job = held.find(
          (j) => j.data.event === 'call_analyzed' && j.data.call.metadata?.call_id === callId,
        );
        expect(job).toBeDefined();
        return job!;
      }, 30_000);
      await analyzed.remove();
    } finally {
      await events.resume();
    }
    await waitForCall(firm.client, callId, (c) => c.status === 'ended', 30_000);
    await sleep(SIM_CALL_MS * 2);
    expect((await callsOf(stack).findOne({ _id: callId }))?.call_analysis).toBeNull();

    const swept = await sweepLostCalls(stack.services, ENDED_ONLY);
    expect(swept).toMatchObject({ asked: 1, events: 1 });
    const ended = await waitForCall(firm.client, callId, (c) => c.lead_id !== null, 30_000);
    expect(ended.call_analysis).not.toBeNull();
  });

  it('is found by the worker’s own sweep, scheduled every LOST_CALL_SWEEP_MS, once older than LOST_DIAL_AFTER_MS', async () => {
    await eventually(async () => {
      const schedulers = await stack.services.queues.maintenance.getJobSchedulers();
      expect(schedulers).toEqual(
        expect.arrayContaining([expect.objectContaining({ key: SWEEP_LOST_CALLS, every: SWEEP_MS })]),
      );
    });
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const [to] = usPhones(1, 840);
    await calls().pause();
    const callId = await createCall(firm, agentId, to!);
    await lose(callId);
    await calls().resume();
    // A few of the worker's sweeps go by: the call is younger than LOST_DIAL_AFTER_MS.
    await sleep(SWEEP_MS * 3);
    expect(await calls().getJobState(callId)).toBe('unknown');
    expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('registered');

    // Made to look older, it is the worker's to sweep.
    await callsOf(stack).updateOne(
      { _id: callId },
      { $set: { created_at: new Date(Date.now() - AFTER_MS - 60_000) } },
    );
    const ended = await waitForCall(firm.client, callId, (c) => c.status === 'error', 30_000);
    expect(ended.disconnection_reason).toBe('dial_failed');
    expect(await simulatorDials(stack, [to!])).toEqual([]);
  });
});
