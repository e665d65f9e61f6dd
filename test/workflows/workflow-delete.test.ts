// DELETE /api/workflows/{id} (docs/workflows.md#routes): the workflow's runs under way end
// `cancelled` at once, those parked in a month's `wait` or `wait_for` too, without their timer
// coming round (WORKFLOW_TIME_SCALE is 1 here: a month is a month). Through the real HTTP API,
// with the workers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/table.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
beforeAll(async () => {
  stack = await startStack({ workers: true });
  firm = await createFirm(stack);
});
afterAll(async () => {
  await stack?.stop();
});

const MONTH = { days: 30 };

describe('deleting a workflow', () => {
  it('cancels its runs parked in a long wait or wait_for now, not when their timer comes', async () => {
    const notes = `parked-${rand(3)}`;
    const created = await firm.client.post('/api/workflows', {
      firmSlug: firm.slug,
      name: 'Chase in a month',
      nodes: [
        {
          id: 'new',
          type: 'trigger.event',
          data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: notes } },
        },
        { id: 'month', type: 'wait', data: { duration: MONTH } },
        { id: 'tag', type: 'update_lead', data: { tags: ['a-month-later'] } },
        { id: 'booked', type: 'wait_for', data: { event: 'appointment.booked', within: MONTH } },
        { id: 'seen', type: 'update_lead', data: { tags: ['booked'] } },
      ],
      edges: [
        { id: 'e1', source: 'new', target: 'month' },
        { id: 'e2', source: 'month', target: 'tag' },
        { id: 'e3', source: 'new', target: 'booked' },
        { id: 'e4', source: 'booked', target: 'seen', sourceHandle: 'matched' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    expect((await firm.client.post(`/api/workflows/${id}/activate`, {})).status).toBe(200);
    const leads = await Promise.all(
      [1, 2].map((n) => firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: `P${n}`, notes })),
    );
    for (const lead of leads) expect(lead.status, JSON.stringify(lead.body)).toBe(200);

    // Both runs parked: the wait done and its next step's job delayed a month, the wait_for waiting.
    const runIds = await eventually(async () => {
      const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs as Array<{ id: string }>;
      expect(runs).toHaveLength(2);
      for (const { id: runId } of runs) {
        const run = (await firm.client.get(`/api/workflow-runs/${runId}`)).body;
        const status = (node: string) => run.steps.find((s: any) => s.node_id === node)?.status;
        expect([run.status, status('month'), status('tag'), status('booked')]).toEqual([
          'running',
          'done',
          'pending',
          'waiting',
        ]);
      }
      return runs.map((r) => r.id);
    }, 30_000);

    const deleted = await firm.client.delete(`/api/workflows/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, deleted: true });

    for (const runId of runIds) {
      const run = await eventually(async () => {
        const res = await firm.client.get(`/api/workflow-runs/${runId}`);
        expect(res.status).toBe(200);
        expect(res.body.status).toBe('cancelled');
        return res.body;
      }, 30_000);
      expect(run.status_reason).toContain('deleted');
      expect(run.finished_at).not.toBeNull();
      const byNode = Object.fromEntries(run.steps.map((s: any) => [s.node_id, s.status]));
      expect(byNode).toEqual({ new: 'done', month: 'done', tag: 'cancelled', booked: 'cancelled' });
      // Nothing left parked for a month: the delayed step and the wait_for's timeout are gone. The
      // cancel removes them just after the run shows `cancelled` (outside the run's lock), so look
      // until they are; on code that did not remove them they stay for the month.
      const tag = run.steps.find((s: any) => s.node_id === 'tag');
      const booked = run.steps.find((s: any) => s.node_id === 'booked');
      const queue = stack.services.queues.workflows;
      const job = (stepId: string) => ({ firm: firm.slug, runId, stepId });
      await eventually(async () => {
        expect(await queue.getJob(JOBS.workflowStep.id!(job(tag.id)))).toBeUndefined();
        expect(await queue.getJob(JOBS.workflowWaitTimeout.id!(job(booked.id)))).toBeUndefined();
      }, 10_000);
    }
  });
});
