// SIGTERM on the real worker process (workers/main.ts) while a job is in flight: the job is
// never lost. Within the grace period the worker lets it finish and exits 0; a job that
// outlasts the grace period is handed back to the queue, the process still exits in time, and
// another worker completes the job without dialling twice.
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../workers/runner.js';
import { retellEnv, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import { callsOf, createAgent } from '../calls/support.js';
import { setTimeout as sleep } from 'node:timers/promises';

let fake: RetellFake;
let stack: Stack;
let child: ChildProcess | undefined;
let workers: Workers | undefined;

beforeAll(async () => {
  fake = await startRetellFake();
  stack = await startStack({
    env: {
      ...retellEnv(fake),
      JOB_LOCK_MS: '2000',
      // A dial still under way when its job was handed back is looked up once its lease has run out.
      EFFECT_LEASE_MS: '3000',
      EFFECT_LEASE_CLOCK_MARGIN_MS: '500',
    },
  });
});
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  fake.release();
  await workers?.stop();
  workers = undefined;
});
afterAll(async () => {
  await stack?.stop();
  await fake?.close();
});

/** Places a call with the worker child running and returns once Retell holds the dial request. */
async function callInFlight(
  env: Record<string, string>,
): Promise<{ callId: string; creates: () => unknown[] }> {
  const firm = await createFirm(stack, { from_number: '+14155550100' });
  const agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
  fake.hold('create-phone-call');
  child = startWorkerProcess({ ...stack.env, ...env });
  // The child consumes the calls queue before the call is made: under tsx it takes seconds of CPU
  // to start, tens of seconds on a loaded machine, which the wait for the dial below is not for.
  await eventually(
    async () => expect((await stack.services.queues.calls.getWorkers()).length).toBeGreaterThan(0),
    90_000,
    100,
  );
  const created = await firm.client.post('/api/v2/create-outbound-call', {
    toNumber: '+14155550123',
    agentId,
    firmSlug: firm.slug,
  });
  expect(created.status).toBe(200);
  const callId: string = created.body.call_id;
  const creates = () =>
    fake.requestsTo('create-phone-call').filter((r) => r.body?.metadata?.call_id === callId);
  await eventually(async () => expect(creates()).toHaveLength(1), 30_000, 20);
  expect(await (await stack.services.queues.calls.getJob(callId))?.getState()).toBe('active');
  return { callId, creates };
}

describe('SIGTERM on a worker with a job in flight', () => {
  it('lets the job finish, then exits 0', async () => {
    const { callId, creates } = await callInFlight({});
    child!.kill('SIGTERM');
    const exit = exitOf(child!);
    // Still draining: it does not leave while its job waits for Retell's answer.
    await sleep(500);
    expect(child!.exitCode).toBeNull();
    fake.release();
    // 0: the process's own word that it stopped before its deadline (SHUTDOWN_TIMEOUT_MS, after
    // which it exits 1), not a clock of this test's.
    expect(await exit).toMatchObject({ code: 0, signal: null });

    const job = await stack.services.queues.calls.getJob(callId);
    expect(await job?.getState()).toBe('completed');
    const call = await callsOf(stack).findOne({ _id: callId });
    expect(call?.provider_call_id).toBeTruthy();
    expect(creates()).toHaveLength(1);
  }, 240_000);

  it('hands back a job that outlasts the grace period; another worker completes it without a second dial', async () => {
    // SHUTDOWN_TIMEOUT_MS 6000 leaves the worker 1 s of grace before it hands jobs back.
    const { callId, creates } = await callInFlight({ SHUTDOWN_TIMEOUT_MS: '6000' });
    child!.kill('SIGTERM');
    // In time: a worker that kept waiting for the held dial would pass its 6 s deadline and exit 1.
    expect(await exitOf(child!)).toMatchObject({ code: 0, signal: null });
    expect(creates()).toHaveLength(1);
    // Handed back, not lost and not failed.
    const state = await (await stack.services.queues.calls.getJob(callId))?.getState();
    expect(['waiting', 'active', 'delayed']).toContain(state);

    fake.release();
    workers = startInProcessWorkers(stack);
    await eventually(
      async () =>
        expect(await (await stack.services.queues.calls.getJob(callId))?.getState()).toBe('completed'),
      30_000,
    );
    const call = await callsOf(stack).findOne({ _id: callId });
    expect(call?.provider_call_id).toBeTruthy();
    expect(creates()).toHaveLength(1);
    expect(fake.calls.filter((c) => (c.metadata as { call_id?: string })?.call_id === callId)).toHaveLength(
      1,
    );
  }, 240_000);
});
