// Never dial twice: a worker process is really killed (SIGKILL) after it marked the dial and
// while Retell holds its create-phone-call answer (Retell did create the call). A new worker
// takes the stalled job over, asks Retell for a call carrying our call_id, finds it and
// records its id — Retell sees exactly one create-phone-call.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../workers/runner.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import { retellEnv, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { callsOf, createAgent } from './support.js';

let fake: RetellFake;
let stack: Stack;
let child: ChildProcess | undefined;
let workers: Workers | undefined;

beforeAll(async () => {
  fake = await startRetellFake();
  stack = await startStack({
    env: {
      ...retellEnv(fake),
      // A crashed worker's job is taken over after the lock lapses, and its dial is looked up
      // once the dial's lease has ended (plus the clock margin): keep both short here.
      JOB_LOCK_MS: '2000',
      EFFECT_LEASE_MS: '3000',
      EFFECT_LEASE_CLOCK_MARGIN_MS: '500',
    },
  });
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await workers?.stop();
  await stack?.stop();
  await fake?.close();
});

describe('a worker killed between the dial mark and the provider answer', () => {
  it('leaves exactly one provider call, and the restarted worker records its id', async () => {
    const firm = await createFirm(stack, { from_number: '+14155550100' });
    const agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
    fake.hold('create-phone-call');
    child = startWorkerProcess(stack.env);

    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId,
      firmSlug: firm.slug,
    });
    expect(created.status).toBe(200);
    const callId: string = created.body.call_id;
    const creates = () =>
      fake.requestsTo('create-phone-call').filter((r) => r.body?.metadata?.call_id === callId);

    // Retell has the request (and created the call); its answer is held.
    await eventually(async () => expect(creates()).toHaveLength(1), 30_000, 20);
    const marked = await callsOf(stack).findOne({ _id: callId });
    expect(marked?.dial).toMatchObject({ state: 'running', attempts: 1 });
    expect(marked?.provider_call_id).toBeNull();

    const exited = exitOf(child);
    child.kill('SIGKILL');
    expect((await exited).signal).toBe('SIGKILL');
    fake.release(); // nothing left to answer: the connection died with the worker

    workers = startInProcessWorkers(stack);
    const recovered = await eventually(
      async () => {
        const call = await callsOf(stack).findOne({ _id: callId });
        expect(call?.provider_call_id).toBeTruthy();
        return call!;
      },
      30_000,
      50,
    );

    const atRetell = fake.calls.filter((c) => (c.metadata as any)?.call_id === callId);
    expect(atRetell).toHaveLength(1);
    expect(recovered.provider_call_id).toBe(atRetell[0]!.call_id);
    expect(recovered.dial.state).toBe('done');
    expect(creates()).toHaveLength(1);
    // The new worker asked Retell (list-calls by our call_id) instead of dialling again.
    const asked = fake
      .requestsTo('list-calls')
      .filter((r) => r.body?.filter_criteria?.metadata?.[0]?.value === callId);
    expect(asked.length).toBeGreaterThanOrEqual(1);
    await eventually(async () => {
      const job = await stack.services.queues.calls.getJob(callId);
      expect(await job?.getState()).toBe('completed');
      expect(job?.returnvalue).toEqual({ outcome: 'found_at_provider' });
    });
  });
});
