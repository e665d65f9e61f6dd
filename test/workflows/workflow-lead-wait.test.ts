// A run whose event names a lead not stored yet (docs/workflows.md#runs): call.analyzed is
// recorded before the call's effects and names the lead its lead effect makes next. A step that
// read the lead at once found none and skipped what the lead was for: on a throttled machine the
// example workflow's Clio matter step ran before the call's lead effect and was `skipped`
// (2026-12-01). Now the step waits, parked without spending an attempt, and goes on with the lead
// once it is stored; past WORKFLOW_LEAD_WAIT_MS it goes on without it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../../core/domain/events/record-event.js';
import { ensureSubjectLead, subjectLeadId } from '../../core/domain/leads/leads.js';
import { LeadNotStoredYetError, readRunLead } from '../../core/domain/workflows/runs/context.js';
import { jobId } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import type { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ workers: true });
});
afterAll(async () => stack?.stop());

async function tagger(client: ApiClient, firmSlug: string): Promise<string> {
  const created = await client.post('/api/workflows', {
    firmSlug,
    name: 'Tag the caller',
    nodes: [
      { id: 'analysed', type: 'trigger.event', data: { event: 'call.analyzed' } },
      { id: 'tag', type: 'update_lead', data: { tags: ['promised'], status: 'waited' } },
    ],
    edges: [{ id: 'p1', source: 'analysed', target: 'tag' }],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id as string;
  expect((await client.post(`/api/workflows/${id}/activate`, {})).status).toBe(200);
  return id;
}

async function runOf(client: ApiClient, workflowId: string) {
  const runs = await client.get(`/api/workflows/${workflowId}/runs`);
  expect(runs.body.runs).toHaveLength(1);
  return (await client.get(`/api/workflow-runs/${runs.body.runs[0].id}`)).body;
}

describe('a run whose event names a lead not stored yet', () => {
  it('waits for it, parked without spending an attempt, then goes on with it', async () => {
    const firm = await createFirm(stack);
    const workflowId = await tagger(firm.client, firm.slug);
    const callId = `call_promised_${rand(4)}`;
    const leadId = subjectLeadId('call', callId);
    await recordEvent(stack.services, {
      firm: firm.slug,
      type: 'call.analyzed',
      subject: callId,
      key: 'analyzed|promised',
      occurred_at: new Date(),
      data: { call_id: callId, lead_id: leadId },
    });

    // The first step has run and found no lead: its job sleeps in the queue, nothing finished.
    const queue = stack.services.queues[JOBS.workflowStep.queue];
    const parked = await eventually(async () => {
      const run = await runOf(firm.client, workflowId);
      const job = await queue.getJob(jobId('wfs', run.steps[0].id));
      expect(await job?.getState()).toBe('delayed');
      return { run, job: job! };
    });
    expect(parked.run).toMatchObject({ status: 'running', lead_id: leadId });
    expect(parked.run.steps.map((s: any) => [s.node_id, s.status])).toEqual([['analysed', 'pending']]);
    expect(parked.job.attemptsMade).toBe(0);

    // The lead is made (as the call's lead effect makes it): the run goes on with it.
    await ensureSubjectLead(
      stack.services.mongo.db,
      { source: 'call', id: callId, firm: firm.slug },
      { first_name: 'Pat', phone: '+14155550177' },
    );
    const run = await eventually(async () => {
      const now = await runOf(firm.client, workflowId);
      expect(now.status).not.toBe('running');
      return now;
    });
    expect(run.status).toBe('completed');
    expect(run.steps.map((s: any) => [s.node_id, s.status])).toEqual([
      ['analysed', 'done'],
      ['tag', 'done'],
    ]);
    expect((await firm.client.get(`/api/leads/${leadId}`)).body).toMatchObject({
      tags: ['promised'],
      workflow_status: 'waited',
    });
  });

  it('looks again a quarter of the time waited later (1 s to a minute); past WORKFLOW_LEAD_WAIT_MS goes on without it', async () => {
    const firm = await createFirm(stack);
    const waitMs = stack.services.config.workflowLeadWaitMs;
    expect(waitMs).toBe(3_600_000);
    const run = (startedAgoMs: number) => ({
      firm: firm.slug,
      lead_id: subjectLeadId('call', `call_never_${rand(4)}`),
      started_at: new Date(Date.now() - startedAgoMs),
    });
    /**
     * The step's next look, for a run started `startedAgoMs` ago: a quarter of the time waited
     * (1 s to a minute) after the moment of the read. That moment lies between `before` and
     * `after`, and the next look grows with it, so it lies between the two bounds: no tolerance.
     */
    const expectLookAgain = async (startedAgoMs: number, quarter: number): Promise<void> => {
      const ofRun = run(startedAgoMs);
      const next = (at: number) =>
        at + Math.min(60_000, Math.max(1000, Math.round((at - ofRun.started_at.getTime()) / 4)));
      const before = Date.now();
      const err = await readRunLead(stack.services, ofRun).then(
        () => null,
        (e: unknown) => e,
      );
      const after = Date.now();
      expect(err).toBeInstanceOf(LeadNotStoredYetError);
      const until = (err as LeadNotStoredYetError).until;
      expect(until).toBeGreaterThanOrEqual(next(before));
      expect(until).toBeLessThanOrEqual(next(after));
      // And the figure the docs give, at the moment of the read.
      expect(until - before).toBeGreaterThanOrEqual(quarter);
    };
    await expectLookAgain(0, 1000);
    await expectLookAgain(120_000, 30_000);
    await expectLookAgain(waitMs - 60_000, 60_000);
    // Past the bound, and for an event about no lead: no wait.
    await expect(readRunLead(stack.services, run(waitMs))).resolves.toBeNull();
    await expect(
      readRunLead(stack.services, { firm: firm.slug, lead_id: null, started_at: new Date() }),
    ).resolves.toBeNull();
    // A stored lead of another firm is no lead of this run's, nor one to wait for.
    const other = await createFirm(stack);
    const theirs = await ensureSubjectLead(
      stack.services.mongo.db,
      { source: 'call', id: `call_theirs_${rand(4)}`, firm: other.slug },
      { first_name: 'Kim', phone: '+14155550188' },
    );
    await expect(
      readRunLead(stack.services, { firm: firm.slug, lead_id: theirs._id, started_at: new Date() }),
    ).resolves.toBeNull();
  });
});
