// A run cancelled (its workflow deleted: cancel-runs.ts) at the moment one of its steps parks a
// job: a `wait` finished, its next step's job being added with a month's delay; a `wait_for`
// begun, its timeout's job being added. The job must not be left behind in Redis for a month after
// the cancel removed what it found (steps.ts adds it under the run's lock, which the cancel takes
// too). The add is held back in a TCP relay
// in front of Redis, so the cancel comes right then every time; the answers are the real stores'.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../core/platform/config.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices } from '../../core/wiring/services.js';
import { cancelRun } from '../../core/domain/workflows/runs/cancel-runs.js';
import { stepIdOf } from '../../core/domain/workflows/runs/run-store.js';
import { startWorkers, type Workers } from '../../workers/runner.js';
import { processors } from '../../workers/processors/index.js';
import { JOBS } from '../../jobs/table.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { eventually } from '../helpers/eventually.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let relay: TcpRelay;
let workers: Workers;

beforeAll(async () => {
  stack = await startStack();
  const redisUrl = inject('redisUrl');
  relay = await startTcpRelay(new URL(redisUrl));
  // The workers reach Redis through the relay; the test's own cancel does not.
  const config = loadConfig({ ...stack.env, REDIS_URL: relay.via(redisUrl) });
  workers = startWorkers(createServices(config, createLogger('silent', 'test'), 'worker'), processors);
});
afterAll(async () => {
  await workers?.stop();
  await relay?.close();
  await stack?.stop();
});

describe('a run cancelled while a step parks its next step’s job', () => {
  it('leaves no job behind: the cancel comes after the add and removes it', async () => {
    const firm = await createFirm(stack);
    const notes = `parking-${rand(3)}`;
    const next = `tag_${rand(4)}`;
    const created = await firm.client.post('/api/workflows', {
      firmSlug: firm.slug,
      name: 'Chase in a month',
      nodes: [
        {
          id: 'new',
          type: 'trigger.event',
          data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: notes } },
        },
        { id: 'month', type: 'wait', data: { duration: { days: 30 } } },
        { id: next, type: 'update_lead', data: { tags: ['a-month-later'] } },
      ],
      edges: [
        { id: 'e1', source: 'new', target: 'month' },
        { id: 'e2', source: 'month', target: next },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    expect((await firm.client.post(`/api/workflows/${id}/activate`, {})).status).toBe(200);

    // The add of the next step's job (its id holds the node's) is held back on its way to Redis.
    const hold = relay.holdRequest(`|${next}|1`);
    const lead = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Pat', notes });
    expect(lead.status, JSON.stringify(lead.body)).toBe(200);
    await hold.seen;
    const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs as Array<{ id: string }>;
    expect(runs).toHaveLength(1);
    const runId = runs[0]!.id;

    // The cancel, while the add is held: given time to finish before the add lands, if it can.
    const cancelling = cancelRun(stack.services, runId, 'The workflow was deleted.');
    await Promise.race([cancelling, sleep(1_000)]);
    hold.release();
    expect(await cancelling).toBe(true);

    const queue = stack.services.queues[JOBS.workflowStep.queue];
    const month = JOBS.workflowStep.id!({ firm: firm.slug, runId, stepId: stepIdOf(runId, 'month', 1) });
    await eventually(async () => expect(await (await queue.getJob(month))?.getState()).toBe('completed'));
    const parked = JOBS.workflowStep.id!({ firm: firm.slug, runId, stepId: stepIdOf(runId, next, 1) });
    expect(await queue.getJob(parked)).toBeUndefined();
    const run = (await firm.client.get(`/api/workflow-runs/${runId}`)).body;
    expect(run.status).toBe('cancelled');
    expect(Object.fromEntries(run.steps.map((s: any) => [s.node_id, s.status]))).toEqual({
      new: 'done',
      month: 'done',
      [next]: 'cancelled',
    });
  });

  it('a wait_for begun: no timeout job behind, and it no longer waits on its lead', async () => {
    const firm = await createFirm(stack);
    const notes = `waitfor-${rand(3)}`;
    const created = await firm.client.post('/api/workflows', {
      firmSlug: firm.slug,
      name: 'Booked within a month',
      nodes: [
        {
          id: 'new',
          type: 'trigger.event',
          data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: notes } },
        },
        { id: 'booked', type: 'wait_for', data: { event: 'appointment.booked', within: { days: 30 } } },
        { id: 'seen', type: 'update_lead', data: { tags: ['booked'] } },
      ],
      edges: [
        { id: 'e1', source: 'new', target: 'booked' },
        { id: 'e2', source: 'booked', target: 'seen', sourceHandle: 'matched' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    expect((await firm.client.post(`/api/workflows/${id}/activate`, {})).status).toBe(200);

    // The add of the timeout's job (its name) is held back on its way to Redis.
    const hold = relay.holdRequest(JOBS.workflowWaitTimeout.name);
    const lead = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Sam', notes });
    expect(lead.status, JSON.stringify(lead.body)).toBe(200);
    await hold.seen;
    const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs as Array<{ id: string }>;
    expect(runs).toHaveLength(1);
    const runId = runs[0]!.id;

    const cancelling = cancelRun(stack.services, runId, 'The workflow was deleted.');
    await Promise.race([cancelling, sleep(1_000)]);
    hold.release();
    expect(await cancelling).toBe(true);

    const queue = stack.services.queues[JOBS.workflowStep.queue];
    const stepId = stepIdOf(runId, 'booked', 1);
    const booked = JOBS.workflowStep.id!({ firm: firm.slug, runId, stepId });
    // The step's job has ended (the cancel removes a finished one).
    await eventually(async () =>
      expect([undefined, 'completed']).toContain(await (await queue.getJob(booked))?.getState()),
    );
    expect(
      await queue.getJob(JOBS.workflowWaitTimeout.id!({ firm: firm.slug, runId, stepId })),
    ).toBeUndefined();
    const run = (await firm.client.get(`/api/workflow-runs/${runId}`)).body;
    expect(run.status).toBe('cancelled');
    expect(Object.fromEntries(run.steps.map((s: any) => [s.node_id, s.status]))).toEqual({
      new: 'done',
      booked: 'cancelled',
    });
    const waits = await stack.services.mongo.db
      .collection<{ _id: string; waiters: Array<{ step_id: string }> }>(COLLECTIONS.workflowWaits)
      .find({})
      .toArray();
    expect(waits.flatMap((w) => w.waiters.map((x) => x.step_id))).not.toContain(stepId);
  });
});
