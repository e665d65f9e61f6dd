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

type Firm = Awaited<ReturnType<typeof createFirm>>;

/**
 * A workflow run by each new lead whose notes are its own, its first nodes after the trigger
 * given; a lead made while the add holding `marker` is held back on its way to Redis; its run
 * cancelled right then (given time to finish before the add lands, if it can), then the add let
 * go. Returns the run's id once the cancel has answered.
 */
async function cancelledWhileAdding(
  firm: Firm,
  marker: string,
  nodes: unknown[],
  edges: unknown[],
): Promise<string> {
  const notes = `parking-${rand(3)}`;
  const trigger = {
    id: 'new',
    type: 'trigger.event',
    data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: notes } },
  };
  const created = await firm.client.post('/api/workflows', {
    firmSlug: firm.slug,
    name: `Parks a job ${notes}`,
    nodes: [trigger, ...nodes],
    edges,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id as string;
  expect((await firm.client.post(`/api/workflows/${id}/activate`, {})).status).toBe(200);

  const hold = relay.holdRequest(marker);
  const lead = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Pat', notes });
  expect(lead.status, JSON.stringify(lead.body)).toBe(200);
  await hold.seen;
  const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs as Array<{ id: string }>;
  expect(runs).toHaveLength(1);
  const runId = runs[0]!.id;
  const cancelling = cancelRun(stack.services, runId, 'The workflow was deleted.');
  await Promise.race([cancelling, sleep(1_000)]);
  hold.release();
  expect(await cancelling).toBe(true);
  return runId;
}

const queue = () => stack.services.queues[JOBS.workflowStep.queue];
const stepJob = (firm: Firm, runId: string, node: string) =>
  JOBS.workflowStep.id!({ firm: firm.slug, runId, stepId: stepIdOf(runId, node, 1) });

/** The run, cancelled, with each node's step status. */
async function expectCancelled(firm: Firm, runId: string, steps: Record<string, string>) {
  const run = (await firm.client.get(`/api/workflow-runs/${runId}`)).body;
  expect(run.status).toBe('cancelled');
  expect(Object.fromEntries(run.steps.map((s: any) => [s.node_id, s.status]))).toEqual(steps);
}

describe('a run cancelled while a step parks a job', () => {
  it('a wait finished: its next step’s job is not left behind', async () => {
    const firm = await createFirm(stack);
    const next = `tag_${rand(4)}`;
    // The add of the next step's job (its id holds the node's) is held.
    const runId = await cancelledWhileAdding(
      firm,
      `|${next}|1`,
      [
        { id: 'month', type: 'wait', data: { duration: { days: 30 } } },
        { id: next, type: 'update_lead', data: { tags: ['a-month-later'] } },
      ],
      [
        { id: 'e1', source: 'new', target: 'month' },
        { id: 'e2', source: 'month', target: next },
      ],
    );
    const month = stepJob(firm, runId, 'month');
    await eventually(async () => expect(await (await queue().getJob(month))?.getState()).toBe('completed'));
    expect(await queue().getJob(stepJob(firm, runId, next))).toBeUndefined();
    await expectCancelled(firm, runId, { new: 'done', month: 'done', [next]: 'cancelled' });
  });

  it('a wait_for begun: no timeout job behind, and it no longer waits on its lead', async () => {
    const firm = await createFirm(stack);
    // The add of the timeout's job (its name) is held.
    const runId = await cancelledWhileAdding(
      firm,
      JOBS.workflowWaitTimeout.name,
      [
        { id: 'booked', type: 'wait_for', data: { event: 'appointment.booked', within: { days: 30 } } },
        { id: 'seen', type: 'update_lead', data: { tags: ['booked'] } },
      ],
      [
        { id: 'e1', source: 'new', target: 'booked' },
        { id: 'e2', source: 'booked', target: 'seen', sourceHandle: 'matched' },
      ],
    );
    // The step's job has ended (the cancel removes a finished one).
    const booked = stepJob(firm, runId, 'booked');
    await eventually(async () =>
      expect([undefined, 'completed']).toContain(await (await queue().getJob(booked))?.getState()),
    );
    const stepId = stepIdOf(runId, 'booked', 1);
    expect(
      await queue().getJob(JOBS.workflowWaitTimeout.id!({ firm: firm.slug, runId, stepId })),
    ).toBeUndefined();
    await expectCancelled(firm, runId, { new: 'done', booked: 'cancelled' });
    const waits = await stack.services.mongo.db
      .collection<{ _id: string; waiters: Array<{ step_id: string }> }>(COLLECTIONS.workflowWaits)
      .find({})
      .toArray();
    expect(waits.flatMap((w) => w.waiters.map((x) => x.step_id))).not.toContain(stepId);
  });
});
