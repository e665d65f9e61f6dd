// Workflows that run (docs/workflows.md#runs), on real peers: the example graph as a flow builder
// saves it runs end to end (the Clio matter, the mail, a day's wait on a short configured unit,
// the call through the simulator); a `wait_for` takes its `matched` branch when the booking
// webhook comes in time and its `timeout` branch when not; a cycle through a `wait` stops at the
// firm's bound and says so; an opted-out number stops the call step; activation checks the graph
// and versions keep runs apart; the dry run walks the example without any effect, and its output
// is the one docs/workflows.md shows; a Clio task and notes go on the run's matter (or the lead's
// contact), once each even when Clio's answer to the task is lost.
import { Webhook } from 'standardwebhooks';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { format, type Options } from 'prettier';
import prettierConfig from '../../.prettierrc.json' with { type: 'json' };
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { eventIdOf, recordEvent } from '../../core/domain/events/record-event.js';
import { createAgent } from '../calls/support.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import type { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { eventsOf } from '../helpers/events.js';
import { jobId } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { CAPPED, CAPPED_ATTEMPTS } from '../../jobs/backoff.js';
import { expectError } from '../helpers/expect-error.js';
import { documentedResponses } from '../helpers/documented-response.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { JANE, postSigned, retellCallAnalyzed } from '../webhooks/support.js';
import { PI_TEAM, exampleGraph } from './example-graph.js';

const VOICE_SECRET = 'voice_secret_workflows_0123';
const BOOKING_SECRET = 'whsec_workflows_booking_secret';
const CAL_KEY = 'cal_live_workflows_0123456789';
const EVENT_TYPE = 7272;
const DAY = 86_400_000;
// A day of workflow time passes in 3 s of wall time (WORKFLOW_TIME_SCALE), so no test sleeps.
const TIME_SCALE = DAY / 3000;
const LOOP_BOUND = 3;
// Runs under way per firm; only the other firm's test comes near it.
const RUNS_BOUND = 5;

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let cal: FakeCalcom;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let other: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;
const slackUrl = () => firmSlack;
let firmSlack = '';
const slots = dailySlots(Date.now() + DAY, 3, 4);

beforeAll(async () => {
  [smtp, clio, slack] = await Promise.all([startFakeSmtp(), startFakeClio(), startFakeSlack()]);
  cal = await startFakeCalcom({ apiKey: CAL_KEY, eventTypeId: EVENT_TYPE, slots });
  stack = await startStack({
    workers: true,
    env: {
      SMTP_URL: smtp.url,
      WORKFLOW_TIME_SCALE: String(TIME_SCALE),
      WORKFLOW_MAX_LOOP_ITERATIONS: String(LOOP_BOUND),
      WORKFLOW_MAX_CONCURRENT_RUNS: String(RUNS_BOUND),
      WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms',
    },
  });
  firmSlack = slack.webhookUrl();
  firm = await createFirm(stack, {
    voice_webhook_secret: VOICE_SECRET,
    booking_webhook_secret: BOOKING_SECRET,
    notification_emails: ['desk@firm.test'],
    slack_webhook_url: firmSlack,
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    booking: { provider: 'calcom', api_key: CAL_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
  });
  cal.setWebhook({ url: `${stack.baseUrl}/api/v2/${firm.slug}/booking-webhook`, secret: BOOKING_SECRET });
  other = await createFirm(stack);
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => {
  await stack?.stop();
  await Promise.all([smtp?.stop(), clio?.close(), slack?.close(), cal?.stop()]);
});

async function activeWorkflow(
  client: ApiClient,
  firmSlug: string,
  name: string,
  graph: { nodes: unknown[]; edges: unknown[] },
) {
  const created = await client.post('/api/workflows', { firmSlug, name, ...graph });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id as string;
  const activated = await client.post(`/api/workflows/${id}/activate`, {});
  expect(activated.status, JSON.stringify(activated.body)).toBe(200);
  expect(activated.body).toEqual({ id, active: true, version: 1 });
  return id;
}

/** The workflow's one run once it has ended (any status but running), with its steps. */
async function endedRun(client: ApiClient, workflowId: string, timeoutMs = 30_000) {
  return eventually(
    async () => {
      const runs = await client.get(`/api/workflows/${workflowId}/runs`);
      expect(runs.status).toBe(200);
      expect(runs.body.runs).toHaveLength(1);
      const run = await client.get(`/api/workflow-runs/${runs.body.runs[0].id}`);
      expect(run.status).toBe(200);
      expect(run.body.status, JSON.stringify(run.body)).not.toBe('running');
      return run.body;
    },
    timeoutMs,
    100,
  );
}

const stepOf = (run: { steps: Array<{ node_id: string }> }, nodeId: string) =>
  run.steps.filter((s) => s.node_id === nodeId) as any[];

/** Waits until the fan-out of a lead's lead.created event (which starts its workflow runs) has run. */
async function triggered(leadId: string): Promise<void> {
  const eventId = eventIdOf({ firm: firm.slug, type: 'lead.created', subject: leadId, key: 'created' });
  await eventually(async () => {
    const job = await stack.services.queues.webhooks.getJob(`fanout|${eventId}`);
    expect(await job?.isCompleted()).toBe(true);
  });
}

async function newLead(fields: Record<string, unknown>): Promise<string> {
  const res = await firm.client.post('/api/leads', { firmSlug: firm.slug, ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}

describe('the example graph, saved as a flow builder saves it', () => {
  it('runs end to end: the Clio matter, the mail to the PI team, a day of waiting, then the call', async () => {
    const graph = exampleGraph(agentId);
    const workflowId = await activeWorkflow(firm.client, firm.slug, 'Car accident intake', graph);
    // The stored graph is still exactly what the builder sent.
    const read = await firm.client.get(`/api/workflows/${workflowId}`);
    expect(read.body.nodes).toEqual(graph.nodes);
    expect(read.body.edges).toEqual(graph.edges);

    const caller = { ...JANE, email: `jane.${rand(3)}@example.com` };
    const body = retellCallAnalyzed({ caller });
    expect((await postSigned(stack, firm.slug, VOICE_SECRET, body)).status).toBe(200);

    const run = await endedRun(firm.client, workflowId);
    expect(run).toMatchObject({ status: 'completed', version: 1, event: { type: 'call.analyzed' } });
    expect(run.steps.map((s: any) => [s.node_id, s.status, s.branch])).toEqual([
      ['analysed', 'done', null],
      ['car-accident', 'done', 'true'],
      ['matter', 'done', null],
      ['mail-pi', 'done', null],
      ['a-day', 'done', null],
      ['booked?', 'done', 'true'],
      ['call-again', 'done', null],
    ]);
    // Every answer in the shape /openapi.json declares, no field beyond it.
    const expectDocumented = await documentedResponses(stack.api, { closed: true });
    const runs = await firm.client.get(`/api/workflows/${workflowId}/runs`);
    expectDocumented(runs, 'GET', '/api/workflows/{id}/runs');
    expectDocumented(await firm.client.get(`/api/workflow-runs/${run.id}`), 'GET', '/api/workflow-runs/{id}');
    expectDocumented(
      await firm.client.post(`/api/workflows/${workflowId}/activate`, {}),
      'POST',
      '/api/workflows/{id}/activate',
    );
    expectDocumented(
      await firm.client.post(`/api/workflows/${workflowId}/dry-run`, {
        event: { type: 'call.analyzed', data: { direction: 'inbound', outcome: 'conversation' } },
      }),
      'POST',
      '/api/workflows/{id}/dry-run',
    );
    // The wait was a day of workflow time.
    const wait = stepOf(run, 'a-day')[0];
    expect(Date.parse(wait.result.resume_at) - Date.parse(wait.started_at)).toBeGreaterThanOrEqual(
      DAY - 1000,
    );

    const matterRef = (reference: string | null) => reference?.startsWith('wf_') === true;
    const matters = clio.matters.filter((m) => matterRef(m.client_reference));
    expect(matters).toHaveLength(1);
    expect(matters[0]!.description).toContain('Car accident — Jane');
    expect(stepOf(run, 'matter')[0].result).toMatchObject({ matter_id: matters[0]!.id });

    const mails = smtp.messages.filter((m) => m.to.includes(PI_TEAM));
    expect(mails).toHaveLength(1);

    const callId = stepOf(run, 'call-again')[0].result.call_id as string;
    expect(callId).toMatch(/^call_wf/);
    // The simulator's own log of what it dialled: the workflow's call, once, to the lead's number.
    const dialled = await eventually(async () => {
      const rows = await stack.services.mongo.db
        .collection(COLLECTIONS.simulatorCalls)
        .find({ 'metadata.call_id': callId })
        .toArray();
      expect(rows).toHaveLength(1);
      return rows;
    });
    expect(dialled[0]!.to_number).toBe('+14155550142');
    const call = await firm.client.get(`/api/v2/get-call/${callId}`);
    expect(call.body).toMatchObject({
      to_number: '+14155550142',
      dynamic_variables: { reason: 'follow-up on your accident' },
    });
    // The sticky note is kept in the graph and never becomes a step.
    expect(stepOf(run, 'sticky-1')).toEqual([]);
  });
});

/** trigger lead.created → wait_for appointment.booked → matched: Slack; timeout: mail. */
function waitForGraph(within: Record<string, number>, notes: string) {
  return {
    nodes: [
      {
        id: 'new-lead',
        type: 'trigger.event',
        position: { x: 0, y: 0 },
        // Only this workflow's leads (each test marks its own by their notes).
        data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: notes } },
      },
      {
        id: 'booked-in-time',
        type: 'wait_for',
        position: { x: 0, y: 100 },
        data: { event: 'appointment.booked', within },
      },
      {
        id: 'tell-slack',
        type: 'notify_slack',
        position: { x: -100, y: 200 },
        data: { text: '{{lead.name}} booked for {{lead.appointment.start}}' },
      },
      {
        id: 'chase',
        type: 'send_email',
        position: { x: 100, y: 200 },
        data: { to: 'firm', subject: 'No booking from {{lead.name}}', body: 'Chase {{lead.email}}.' },
      },
    ],
    edges: [
      { id: 'w1', source: 'new-lead', target: 'booked-in-time' },
      { id: 'w2', source: 'booked-in-time', target: 'tell-slack', sourceHandle: 'matched' },
      { id: 'w3', source: 'booked-in-time', target: 'chase', sourceHandle: 'timeout' },
    ],
  };
}

describe('wait_for: an event about the same lead within a time', () => {
  let workflowId: string;
  beforeAll(async () => {
    // Three weeks of workflow time (a minute of wall time) for the booking to come.
    workflowId = await activeWorkflow(
      firm.client,
      firm.slug,
      'Booked soon?',
      waitForGraph({ days: 21 }, 'booked'),
    );
  });

  it('takes its "matched" branch when the booking webhook arrives in time', async () => {
    const email = `booker.${rand(3)}@example.com`;
    const leadId = await newLead({ first_name: 'Bo', last_name: 'Oker', email, notes: 'booked' });
    // The run waits before the booking is made, its timeout parked. The step shows `waiting` a
    // moment before the timeout's job is added (both under the run's lock): look until both are.
    const timeout = await eventually(async () => {
      const runs = await firm.client.get(`/api/workflows/${workflowId}/runs`);
      const run = await firm.client.get(`/api/workflow-runs/${runs.body.runs[0].id}`);
      const step = stepOf(run.body, 'booked-in-time')[0];
      expect(step?.status).toBe('waiting');
      const job = await stack.services.queues.workflows.getJob(
        JOBS.workflowWaitTimeout.id!({ firm: firm.slug, runId: run.body.id, stepId: step.id }),
      );
      expect(await job?.getState()).toBe('delayed');
      return job!;
    });
    // Parked for three weeks, it outlasts an outage of the stores at its time: retried at most
    // 5 s apart for about an hour, not given up after 8 attempts (about 2 minutes).
    expect(timeout.opts).toMatchObject({ attempts: CAPPED_ATTEMPTS, backoff: { type: CAPPED } });
    const booked = await firm.client.post('/api/appointments', {
      firmSlug: firm.slug,
      start: new Date(slots[0]!).toISOString(),
      attendee: { name: 'Bo Oker', email, timeZone: 'America/New_York' },
      lead_id: leadId,
    });
    expect(booked.status, JSON.stringify(booked.body)).toBe(200);
    const run = await endedRun(firm.client, workflowId);
    expect(run.status).toBe('completed');
    const waited = stepOf(run, 'booked-in-time')[0];
    expect(waited).toMatchObject({ status: 'done', branch: 'matched' });
    expect(waited.result.event_id).toMatch(/^evt_/);
    expect(stepOf(run, 'tell-slack')[0].status).toBe('done');
    expect(stepOf(run, 'chase')).toEqual([]);
    expect(
      slack.messages(slackUrl()).filter((m) => JSON.stringify(m).includes('Bo Oker booked')),
    ).toHaveLength(1);
  });

  it('takes its "timeout" branch when no booking comes in time', async () => {
    const id = await activeWorkflow(
      firm.client,
      firm.slug,
      'Booked within the hour?',
      waitForGraph({ hours: 1 }, 'hour'),
    );
    const email = `slow.${rand(3)}@example.com`;
    await newLead({ first_name: 'Slow', email, notes: 'hour' });
    const run = await endedRun(firm.client, id);
    expect(run.status).toBe('completed');
    expect(stepOf(run, 'booked-in-time')[0]).toMatchObject({ status: 'done', branch: 'timeout' });
    expect(stepOf(run, 'tell-slack')).toEqual([]);
    expect(stepOf(run, 'chase')[0].status).toBe('done');
    expect(
      smtp.messages.filter((m) => (m.header('subject') ?? '').includes('No booking from Slow')),
    ).toHaveLength(1);
  });
});

describe('bounds and the dial gate', () => {
  it("a cycle through a wait runs the firm's bounded number of times, and the run says so", async () => {
    const id = await activeWorkflow(firm.client, firm.slug, 'Nudge until booked', {
      nodes: [
        {
          id: 'start',
          type: 'trigger.event',
          data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: 'loop' } },
        },
        { id: 'tag', type: 'update_lead', data: { tags: ['nudged'], status: 'nudging' } },
        { id: 'pause', type: 'wait', data: { duration: { minutes: 10 } } },
      ],
      edges: [
        { id: 'l1', source: 'start', target: 'tag' },
        { id: 'l2', source: 'tag', target: 'pause' },
        { id: 'l3', source: 'pause', target: 'tag' },
      ],
    });
    const leadId = await newLead({ first_name: 'Lou', email: `loop.${rand(3)}@example.com`, notes: 'loop' });
    const run = await endedRun(firm.client, id);
    expect(run).toMatchObject({ status: 'limited', limit: 'loop_iterations' });
    expect(run.status_reason).toContain(`bound is ${LOOP_BOUND}`);
    const tags = stepOf(run, 'tag');
    expect(tags.map((s) => [s.visit, s.status])).toEqual([
      [1, 'done'],
      [2, 'done'],
      [3, 'done'],
      [4, 'limited'],
    ]);
    expect(tags[3].result.reason).toContain('WORKFLOW_MAX_LOOP_ITERATIONS');
    // What the steps set is the lead's, as the API shows it; only the first visit changed it: one
    // lead.updated, naming what changed.
    const lead = await firm.client.get(`/api/leads/${leadId}`);
    expect(lead.body).toMatchObject({ tags: ['nudged'], workflow_status: 'nudging' });
    const events = await eventsOf(stack, firm.slug, leadId);
    expect(events.map((e) => [e.type, e.data.changed_fields ?? null])).toEqual([
      ['lead.created', null],
      ['lead.updated', ['tags', 'workflow_status']],
    ]);
    expect(events[1]!.data).toMatchObject({ tags: ['nudged'], workflow_status: 'nudging' });
  });

  it('a workflow that updates the lead it reacts to does not start itself again', async () => {
    const mine = { field: 'notes', operator: 'equals', value: 'self-loop' };
    const tagger = await activeWorkflow(firm.client, firm.slug, 'Tag new leads', {
      nodes: [
        { id: 'new', type: 'trigger.event', data: { event: 'lead.created', filter: mine } },
        { id: 'tag', type: 'update_lead', data: { tags: ['new'] } },
      ],
      edges: [{ id: 't1', source: 'new', target: 'tag' }],
    });
    const watcher = await activeWorkflow(firm.client, firm.slug, 'On every change, mark seen', {
      nodes: [
        { id: 'changed', type: 'trigger.event', data: { event: 'lead.updated', filter: mine } },
        { id: 'seen', type: 'update_lead', data: { tags: ['seen'], status: 'seen' } },
      ],
      edges: [{ id: 'w1', source: 'changed', target: 'seen' }],
    });
    const leadId = await newLead({
      first_name: 'Sam',
      email: `self.${rand(3)}@example.com`,
      notes: 'self-loop',
    });
    expect((await endedRun(firm.client, tagger)).status).toBe('completed');
    const watched = await endedRun(firm.client, watcher);
    expect(watched.status).toBe('completed');
    // The watcher's own change is a lead.updated too; once it has been fanned out, the watcher
    // still has the one run the tagger's change started.
    const updates = await eventually(async () => {
      const found = (await eventsOf(stack, firm.slug, leadId)).filter((e) => e.type === 'lead.updated');
      expect(found.map((e) => e.data.changed_fields)).toEqual([['tags'], ['tags', 'workflow_status']]);
      return found;
    });
    await eventually(async () => {
      const job = await stack.services.queues.webhooks.getJob(jobId('fanout', updates[1]!.id));
      expect(await job?.getState()).toBe('completed');
    });
    const runs = await firm.client.get(`/api/workflows/${watcher}/runs`);
    expect(runs.body.runs).toHaveLength(1);
    expect((await firm.client.get(`/api/leads/${leadId}`)).body).toMatchObject({
      tags: ['new', 'seen'],
      workflow_status: 'seen',
    });
  });

  it('deleting a workflow stops its runs under way at their next step: the wait ends, nothing after it runs', async () => {
    const mine = { field: 'notes', operator: 'equals', value: 'deleted-under-way' };
    // Three days of workflow time: 9 s of wall time for the test to see the run parked and delete
    // the workflow before the step after the wait comes due.
    const id = await activeWorkflow(firm.client, firm.slug, 'Tag after three days', {
      nodes: [
        { id: 'new', type: 'trigger.event', data: { event: 'lead.created', filter: mine } },
        { id: 'day', type: 'wait', data: { duration: { days: 3 } } },
        { id: 'tag', type: 'update_lead', data: { tags: ['a-day-later'] } },
      ],
      edges: [
        { id: 'd1', source: 'new', target: 'day' },
        { id: 'd2', source: 'day', target: 'tag' },
      ],
    });
    const leadId = await newLead({ first_name: 'Noor', notes: 'deleted-under-way' });
    // Under way in its wait: the wait's step done, the step after it made and parked. (Deleted
    // sooner, the run would end before its `tag` step exists.)
    const runId = await eventually(async () => {
      const runs = await firm.client.get(`/api/workflows/${id}/runs`);
      expect(runs.body.runs).toHaveLength(1);
      const run = (await firm.client.get(`/api/workflow-runs/${runs.body.runs[0].id}`)).body;
      expect(run.steps.map((s: any) => [s.node_id, s.status])).toEqual([
        ['new', 'done'],
        ['day', 'done'],
        ['tag', 'pending'],
      ]);
      return run.id as string;
    });
    expect((await firm.client.delete(`/api/workflows/${id}`)).status).toBe(200);
    const run = await eventually(async () => {
      const res = await firm.client.get(`/api/workflow-runs/${runId}`);
      expect(res.status).toBe(200);
      expect(res.body.status).not.toBe('running');
      return res.body;
    }, 30_000);
    expect(run.status).toBe('cancelled');
    expect(stepOf(run, 'tag').map((st) => st.status)).toEqual(['cancelled']);
    expect(run.status_reason ?? run.reason ?? JSON.stringify(run)).toContain('deleted');
    expect((await firm.client.get(`/api/leads/${leadId}`)).body.tags ?? []).not.toContain('a-day-later');
  });

  it('an event recorded again starts no run of a workflow activated after it, nor a second run after an edit', async () => {
    const notes = `rerecorded-${rand(4)}`;
    const record = (key: string) =>
      recordEvent(stack.services, {
        firm: firm.slug,
        type: 'lead.updated',
        subject: `lead_rerecorded_${notes}`,
        key,
        occurred_at: new Date(),
        data: { id: `lead_rerecorded_${notes}`, notes, changed_fields: ['notes'] },
      });
    const fannedOut = (eventId: string) =>
      eventually(async () => {
        const job = await stack.services.queues.webhooks.getJob(jobId('fanout', eventId));
        expect(await job?.getState()).toBe('completed');
      });
    const before = await record('before');
    await new Promise((r) => setTimeout(r, 2500));
    const graph = (minutes: number) => ({
      nodes: [
        {
          id: 'changed',
          type: 'trigger.event',
          data: { event: 'lead.updated', filter: { field: 'notes', operator: 'equals', value: notes } },
        },
        { id: 'pause', type: 'wait', data: { duration: { minutes } } },
      ],
      edges: [{ id: 'r1', source: 'changed', target: 'pause' }],
    });
    const id = await activeWorkflow(firm.client, firm.slug, 'Re-recorded events', graph(1));
    // Recorded again by a retried step: fanned out now, to a workflow that was not listening then.
    expect(await record('before')).toBe(before);
    await fannedOut(before);
    expect((await firm.client.get(`/api/workflows/${id}/runs`)).body.runs).toHaveLength(0);
    const after = await record('after');
    await eventually(async () => {
      expect((await firm.client.get(`/api/workflows/${id}/runs`)).body.runs).toHaveLength(1);
    });
    // An edit while active (version 2), then the same event recorded again: still its one run.
    const put = await firm.client.put(`/api/workflows/${id}`, { name: 'Re-recorded events', ...graph(2) });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await stack.services.queues.webhooks.getJob(jobId('fanout', after)).then((j) => j?.remove());
    expect(await record('after')).toBe(after);
    await fannedOut(after);
    const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs;
    expect(runs.map((r: any) => [r.event.id, r.version])).toEqual([[after, 1]]);
  });

  it('an index entry a change left half-way: the workflow runs as its record says, and an inactive one not at all', async () => {
    const notes = `stale-${rand(4)}`;
    const id = await activeWorkflow(firm.client, firm.slug, 'Stale entry', {
      nodes: [
        {
          id: 'changed',
          type: 'trigger.event',
          data: { event: 'lead.updated', filter: { field: 'notes', operator: 'equals', value: notes } },
        },
        { id: 'pause', type: 'wait', data: { duration: { minutes: 1 } } },
      ],
      edges: [{ id: 's1', source: 'changed', target: 'pause' }],
    });
    const record = async (key: string) => {
      const eventId = await recordEvent(stack.services, {
        firm: firm.slug,
        type: 'lead.updated',
        subject: `lead_${notes}`,
        key,
        occurred_at: new Date(),
        data: { id: `lead_${notes}`, notes, changed_fields: ['notes'] },
      });
      await eventually(async () => {
        const job = await stack.services.queues.webhooks.getJob(jobId('fanout', eventId));
        expect(await job?.getState()).toBe('completed');
      });
      return eventId;
    };
    // What a PUT that died between the index and the record leaves: the index names a version 2
    // the record never took (saved, never the workflow's). The workflow runs its version 1.
    const db = stack.services.mongo.db;
    const v1 = await db.collection('workflow_versions').findOne({ _id: `${id}:v1` as never });
    await db.collection('workflow_versions').insertOne({ ...v1, _id: `${id}:v2` as never, version: 2 });
    const key = `${firm.slug}|lead.updated`;
    const entry = await db.collection(COLLECTIONS.workflowTriggers).findOne({ _id: key as never });
    await db.collection(COLLECTIONS.workflowTriggers).updateOne(
      { _id: key as never },
      {
        $set: {
          entries: (entry!.entries as any[]).map((e) =>
            e.workflow_id === id ? { ...e, version_id: `${id}:v2` } : e,
          ),
        },
      },
    );
    // A new version, as a change of the index writes one (a random value).
    await stack.services.redis.set(redisKeys(stack.config).workflowTriggersVersion(firm.slug), rand(8));
    const first = await record('half-way-put');
    const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs;
    expect(runs.map((r: any) => [r.event.id, r.version])).toEqual([[first, 1]]);
    // What an activation that died between the index and the record leaves: the entry, and a
    // record that says inactive. Nothing runs.
    await db
      .collection(`workflows.${firm.slug}`)
      .updateOne({ _id: id as never }, { $set: { active: false } });
    await record('inactive');
    expect((await firm.client.get(`/api/workflows/${id}/runs`)).body.runs).toHaveLength(1);
    await firm.client.delete(`/api/workflows/${id}`);
  });

  it('a trigger on a group two levels up (contacts.*) starts on contacts.import.completed', async () => {
    const id = await activeWorkflow(firm.client, firm.slug, 'Every contacts event', {
      nodes: [
        { id: 'any', type: 'trigger.event', data: { event: 'contacts.*' } },
        { id: 'tag', type: 'update_lead', data: { tags: ['imported'] } },
      ],
      edges: [{ id: 'c1', source: 'any', target: 'tag' }],
    });
    const imported = await firm.client.post('/api/contacts/import', {
      firmSlug: firm.slug,
      contacts: [{ first_name: 'Ira', email: `group.${rand(4)}@example.com` }],
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    const run = await endedRun(firm.client, id);
    expect(run.event).toMatchObject({ type: 'contacts.import.completed' });
  });

  it("a run started past the firm's bound on runs under way ends at once, limited, and says so", async () => {
    const id = await activeWorkflow(other.client, other.slug, 'Long nurture', {
      nodes: [
        { id: 'start', type: 'trigger.event', data: { event: 'lead.created' } },
        { id: 'weeks', type: 'wait', data: { duration: { days: 300 } } },
        { id: 'remind', type: 'update_lead', data: { tags: ['reminded'] } },
      ],
      edges: [
        { id: 'n1', source: 'start', target: 'weeks' },
        { id: 'n2', source: 'weeks', target: 'remind' },
      ],
    });
    for (let i = 0; i <= RUNS_BOUND; i++) {
      const res = await other.client.post('/api/leads', { firmSlug: other.slug, first_name: `N${i}` });
      expect(res.status).toBe(200);
    }
    const runs = await eventually(async () => {
      const res = await other.client.get(`/api/workflows/${id}/runs`);
      expect(res.body.runs).toHaveLength(RUNS_BOUND + 1);
      expect(res.body.runs.filter((r: any) => r.status === 'limited')).toHaveLength(1);
      return res.body.runs;
    });
    const limited = runs.find((r: any) => r.status === 'limited');
    expect(limited).toMatchObject({ limit: 'concurrent_runs' });
    expect(limited.status_reason).toContain(`${RUNS_BOUND} workflow runs under way`);
    expect(runs.filter((r: any) => r.status === 'running')).toHaveLength(RUNS_BOUND);
    const detail = await other.client.get(`/api/workflow-runs/${limited.id}`);
    expect(detail.body.steps.map((s: any) => [s.node_id, s.status])).toEqual([['start', 'limited']]);
  });

  it('an opted-out number stops the call step: the gate blocks it, the step records why, nothing is dialled', async () => {
    const phone = '+14155550177';
    expect(
      (await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [phone] })).status,
    ).toBe(200);
    const id = await activeWorkflow(firm.client, firm.slug, 'Call every new lead', {
      nodes: [
        {
          id: 'start',
          type: 'trigger.event',
          data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: 'dnc' } },
        },
        { id: 'ring', type: 'call', data: { agent_id: agentId } },
        { id: 'after', type: 'notify_slack', data: { text: 'called {{lead.phone}}' } },
      ],
      edges: [
        { id: 'd1', source: 'start', target: 'ring' },
        { id: 'd2', source: 'ring', target: 'after' },
      ],
    });
    await newLead({ first_name: 'Opted', phone, notes: 'dnc' });
    const run = await endedRun(firm.client, id);
    expect(run.status).toBe('completed');
    expect(stepOf(run, 'ring')[0]).toMatchObject({
      status: 'blocked',
      result: { blocked: 'dnc', call_id: null },
    });
    expect(stepOf(run, 'after')).toEqual([]);
    const dialled = await stack.services.mongo.db
      .collection(COLLECTIONS.simulatorCalls)
      .countDocuments({ to_number: phone });
    expect(dialled).toBe(0);
  });
});

describe('activation and versions', () => {
  const draft = () => ({
    nodes: [
      {
        id: 'start',
        type: 'trigger.event',
        data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: 'v' } },
      },
      {
        id: 'mail',
        type: 'send_email',
        data: { to: 'firm', subject: 'v1 {{lead.first_name}}', body: 'first version' },
      },
    ],
    edges: [{ id: 'v1', source: 'start', target: 'mail' }],
  });

  it('checks a graph only when active: 400 naming the node; drafts save as before', async () => {
    const broken = {
      nodes: [
        { id: 'mail', type: 'send_email', data: { to: 'firm', body: 'no subject' } },
        { id: 'a', type: 'update_lead', data: { tags: ['x'] } },
        { id: 'b', type: 'condition', data: { field: 'lead.tags', operator: 'contains', value: 'x' } },
        { id: 'ui', type: 'group', data: {} },
      ],
      edges: [
        { id: 'ab', source: 'a', target: 'b' },
        { id: 'ba', source: 'b', target: 'a', sourceHandle: 'true' },
      ],
    };
    const saved = await firm.client.post('/api/workflows', { firmSlug: firm.slug, name: 'Draft', ...broken });
    expect(saved.status).toBe(200);
    const refused = await firm.client.post(`/api/workflows/${saved.body.id}/activate`, {});
    const details = expectError(refused, 400, 'invalid_request');
    expect(details).toEqual([
      { path: '/nodes', message: expect.stringContaining('no "trigger.event" node') },
      { path: '/nodes/0/data/subject', message: 'needs "subject" (node "mail")' },
      { path: '/nodes/1', message: expect.stringMatching(/cycle without a "wait".*\(node "a"\)/) },
    ]);
    expect((await firm.client.post(`/api/workflows/${saved.body.id}/deactivate`, {})).body).toEqual({
      id: saved.body.id,
      active: false,
      version: null,
    });
    // Unknown body fields and a bad id are refused as everywhere.
    expectError(
      await firm.client.post(`/api/workflows/${saved.body.id}/activate`, { now: true }),
      400,
      'invalid_request',
    );
    expectError(await firm.client.post('/api/workflows/wf_nope/activate', {}), 404, 'workflow_not_found');
  });

  it('editing an active workflow makes a new version for new runs; a run keeps its version', async () => {
    const id = await activeWorkflow(firm.client, firm.slug, 'Versioned', draft());
    // An edit that would make it unrunnable is refused while active, naming the node.
    const bad = draft();
    bad.nodes[1] = { id: 'mail', type: 'send_email', data: { to: 'firm', subject: '', body: 'x' } };
    const refused = await firm.client.put(`/api/workflows/${id}`, { name: 'Versioned', ...bad });
    expect(expectError(refused, 400, 'invalid_request')).toEqual([
      { path: '/nodes/1/data/subject', message: 'needs "subject" (node "mail")' },
    ]);
    await newLead({ first_name: 'Vee', email: `v1.${rand(3)}@example.com`, notes: 'v' });
    const first = await endedRun(firm.client, id);
    expect(first.version).toBe(1);

    const edited = draft();
    edited.nodes[1] = {
      id: 'mail',
      type: 'send_email',
      data: { to: 'firm', subject: 'v2 {{lead.first_name}}', body: 'second' },
    };
    expect((await firm.client.put(`/api/workflows/${id}`, { name: 'Versioned', ...edited })).status).toBe(
      200,
    );
    await newLead({ first_name: 'Vee', email: `v2.${rand(3)}@example.com`, notes: 'v' });
    const runs = await eventually(async () => {
      const res = await firm.client.get(`/api/workflows/${id}/runs`);
      expect(res.body.runs).toHaveLength(2);
      expect(res.body.runs.every((r: any) => r.status === 'completed')).toBe(true);
      return res.body.runs;
    });
    expect(runs.map((r: any) => r.version)).toEqual([2, 1]);
    const subjects = smtp.messages.map((m) => m.header('subject')).filter((s) => /^v\d Vee$/.test(s ?? ''));
    expect(subjects.sort()).toEqual(['v1 Vee', 'v2 Vee']);

    // Deactivated: a new lead starts nothing.
    await firm.client.post(`/api/workflows/${id}/deactivate`, {});
    const late = await newLead({ first_name: 'Vee', email: `v3.${rand(3)}@example.com`, notes: 'v' });
    await triggered(late);
    expect((await firm.client.get(`/api/workflows/${id}/runs`)).body.runs).toHaveLength(2);
  });

  it("another firm's token finds none of it", async () => {
    const id = await activeWorkflow(firm.client, firm.slug, 'Private', draft());
    for (const res of [
      await other.client.post(`/api/workflows/${id}/activate`, {}),
      await other.client.post(`/api/workflows/${id}/deactivate`, {}),
      await other.client.get(`/api/workflows/${id}/runs`),
      await other.client.post(`/api/workflows/${id}/dry-run`, { event: { type: 'lead.created' } }),
    ]) {
      expectError(res, 404, 'workflow_not_found');
    }
    // A leap second is RFC 3339 but no time JavaScript holds: 400 naming it (it was a 500).
    const leap = await firm.client.post(`/api/workflows/${id}/dry-run`, {
      event: { type: 'lead.created', occurred_at: '2026-06-30T23:59:60Z' },
    });
    expectError(leap, 400, 'invalid_request');
    expect(JSON.stringify(leap.body.error.details)).toContain('/event/occurred_at');
    const runId = `wfr_${firm.slug}_${'0'.repeat(24)}`;
    expectError(await other.client.get(`/api/workflow-runs/${runId}`), 404, 'workflow_run_not_found');
    expectError(await firm.client.get(`/api/workflow-runs/${runId}`), 404, 'workflow_run_not_found');
    expectError(await firm.client.get('/api/workflow-runs/not-a-run'), 404, 'workflow_run_not_found');
  });
});

describe('the dry run', () => {
  const DOCS = new URL('../../docs/workflows.md', import.meta.url);
  const START = '<!-- dry-run of the example: generated by test/workflows/workflow-runs.test.ts -->';
  const END = '<!-- end of the dry-run -->';

  it('walks the example for an event without any effect; its output is the one docs/workflows.md shows', async () => {
    const created = await firm.client.post('/api/workflows', {
      firmSlug: firm.slug,
      name: 'Car accident intake (draft)',
      ...exampleGraph(agentId),
    });
    const leadId = await newLead({
      first_name: 'Jane',
      last_name: 'Roe',
      phone: '+14155550142',
      email: 'jane.roe@example.com',
      case_type: 'Personal Injury',
      notes: 'dry',
    });
    const mails = smtp.messages.length;
    const matters = clio.matters.length;
    const res = await firm.client.post(`/api/workflows/${created.body.id}/dry-run`, {
      event: {
        type: 'call.analyzed',
        subject: 'call_example',
        data: {
          direction: 'inbound',
          outcome: 'conversation',
          caller_data: { case_type: 'Personal Injury', summary: 'Rear-ended at a red light.' },
          lead_id: leadId,
        },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.matched).toBe(true);
    expect(res.body.path.map((s: any) => [s.node_id, s.outcome, s.branch ?? null])).toEqual([
      ['analysed', 'passes', null],
      ['car-accident', 'passes', 'true'],
      ['matter', 'would_run', null],
      ['mail-pi', 'would_run', null],
      ['a-day', 'passes', null],
      ['booked?', 'passes', 'true'],
      ['call-again', 'would_run', null],
    ]);
    expect(res.body.path[3].would_send).toEqual({
      to: [PI_TEAM],
      subject: 'New car accident intake: Jane Roe',
      text: 'Call back +14155550142 (jane.roe@example.com).\n\n',
    });
    // Nothing was sent, stored or enqueued.
    expect(smtp.messages.length).toBe(mails);
    expect(clio.matters.length).toBe(matters);
    expect((await firm.client.get(`/api/workflows/${created.body.id}/runs`)).body.runs).toEqual([]);

    // Another event type, or a filter that fails, matches nothing.
    const other = await firm.client.post(`/api/workflows/${created.body.id}/dry-run`, {
      event: { type: 'call.analyzed', data: { direction: 'outbound' } },
    });
    expect(other.body).toMatchObject({ matched: false, trigger: null, path: [] });
    expectError(
      await firm.client.post(`/api/workflows/${created.body.id}/dry-run`, { event: { type: 'x' }, extra: 1 }),
      400,
      'invalid_request',
    );
    expectError(
      await firm.client.post(`/api/workflows/${created.body.id}/dry-run`, { event: 'call.analyzed' }),
      400,
      'invalid_request',
    );

    // The docs show this output, ids made stable.
    const shown = JSON.stringify(res.body, null, 2)
      .replaceAll(created.body.id, 'wf_acme-law_3Jd0x5Qe9Lr2Tb7K')
      .replaceAll(firm.slug, 'acme-law')
      .replaceAll(agentId, 'agent_7c1e5a93b2d04f68');
    // As prettier writes a json block in markdown (the lint checks docs/ too).
    const formatted = (await format(shown, { ...(prettierConfig as Options), parser: 'json' })).trimEnd();
    const block = `${START}\n\n\`\`\`json\n${formatted}\n\`\`\`\n\n${END}`;
    const docs = readFileSync(DOCS, 'utf8');
    const at = docs.indexOf(START);
    const current = at < 0 ? '' : docs.slice(at, docs.indexOf(END) + END.length);
    if (process.env.WRITE_DOCS === '1' && current !== block) {
      writeFileSync(DOCS, at < 0 ? `${docs.trimEnd()}\n\n${block}\n` : docs.replace(current, block));
    } else {
      expect(current, 'docs/workflows.md: regenerate with WRITE_DOCS=1').toBe(block);
    }
  });
});

describe('the webhook and add_to_campaign actions', () => {
  it("a delivery to the firm's webhook endpoint (signed, logged, retried as events are), then the lead added to a draft campaign", async () => {
    const received: Array<{ headers: Record<string, string>; body: string }> = [];
    let answers = [503, 204]; // the first try fails: the delivery retries it
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, body });
        res.writeHead(answers.shift() ?? 204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/intake`;
      const ep = await firm.client.post('/api/webhook-endpoints', {
        firmSlug: firm.slug,
        url,
        events: ['dnc.added'],
      });
      expect(ep.status).toBe(200);
      const campaign = await firm.client.post('/api/leads/campaigns', {
        firmSlug: firm.slug,
        name: 'Nurture',
        agentId,
      });
      expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
      const graph = (hook: Record<string, unknown>) => ({
        nodes: [
          {
            id: 'start',
            type: 'trigger.event',
            data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: 'hook' } },
          },
          { id: 'hook', type: 'webhook', data: hook },
          { id: 'nurture', type: 'add_to_campaign', data: { campaign_id: campaign.body.id } },
        ],
        edges: [
          { id: 'h1', source: 'start', target: 'hook' },
          { id: 'h2', source: 'hook', target: 'nurture' },
        ],
      });
      // A URL and a secret in the graph are refused at activation: whoever reads it would see them.
      const inline = await firm.client.post('/api/workflows', {
        firmSlug: firm.slug,
        name: 'Inline secret',
        ...graph({ url, secret: 'whsec_c2VjcmV0' }),
      });
      expect(inline.status).toBe(200);
      const refused = await firm.client.post(`/api/workflows/${inline.body.id}/activate`, {});
      expect(expectError(refused, 400, 'invalid_request')).toEqual([
        { path: '/nodes/1/data/endpoint_id', message: expect.stringContaining('needs "endpoint_id"') },
        { path: '/nodes/1/data/secret', message: expect.stringContaining('use "endpoint_id"') },
      ]);
      const id = await activeWorkflow(
        firm.client,
        firm.slug,
        'Tell our CRM, then nurture',
        graph({ endpoint_id: ep.body.id }),
      );
      const leadId = await newLead({ first_name: 'Hook', phone: '+14155550188', notes: 'hook' });
      const run = await endedRun(firm.client, id);
      expect(run.steps.map((s: any) => [s.node_id, s.status])).toEqual([
        ['start', 'done'],
        ['hook', 'done'],
        ['nurture', 'done'],
      ]);
      const hook = run.steps.find((s: any) => s.node_id === 'hook');
      expect(hook.result).toMatchObject({
        endpoint_id: ep.body.id,
        webhook_id: expect.stringMatching(/^msg_/),
      });
      // The endpoint's 503 was retried on the delivery schedule; both tries carry one webhook-id,
      // each verified with the standardwebhooks library and the endpoint's secret.
      await eventually(async () => expect(received).toHaveLength(2));
      const wh = new Webhook(ep.body.secret);
      for (const { headers, body } of received) {
        expect(headers['webhook-id']).toBe(hook.result.webhook_id);
        expect(wh.verify(body, headers)).toMatchObject({
          type: 'workflow.step',
          data: {
            event: { type: 'lead.created', subject: leadId },
            lead: { id: leadId, first_name: 'Hook' },
          },
        });
      }
      const log = await eventually(async () => {
        const res = await firm.client.get(`/api/webhook-endpoints/${ep.body.id}/deliveries`);
        expect(res.body.deliveries[0]?.status).toBe('delivered');
        return res.body.deliveries;
      });
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ id: hook.result.delivery_id, kind: 'workflow', type: 'workflow.step' });
      expect(log[0].attempts.map((a: any) => a.status_code)).toEqual([503, 204]);
      const after = await firm.client.get(`/api/leads/campaigns/${campaign.body.id}`);
      expect(after.body.leads_total).toBe(1);
      // Another firm's endpoint is none of this firm's: refused at activation, naming the node.
      const foreign = await other.client.post('/api/webhook-endpoints', {
        firmSlug: other.slug,
        url,
        events: ['dnc.added'],
      });
      const crossed = await firm.client.post('/api/workflows', {
        firmSlug: firm.slug,
        name: 'Crossed',
        ...graph({ endpoint_id: foreign.body.id }),
      });
      const notOurs = await firm.client.post(`/api/workflows/${crossed.body.id}/activate`, {});
      expect(expectError(notOurs, 400, 'invalid_request')).toEqual([
        {
          path: '/nodes/1/data/endpoint_id',
          message: expect.stringContaining('names no webhook endpoint of this firm'),
        },
      ]);
      // An endpoint deleted after activation: the step is skipped and says why; nothing is sent.
      expect((await firm.client.delete(`/api/webhook-endpoints/${ep.body.id}`)).status).toBe(200);
      await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Gone', notes: 'hook' });
      const skipped = await eventually(async () => {
        const runs = (await firm.client.get(`/api/workflows/${id}/runs`)).body.runs;
        expect(runs).toHaveLength(2);
        const detail = (await firm.client.get(`/api/workflow-runs/${runs[0].id}`)).body;
        expect(detail.status).not.toBe('running');
        return detail;
      });
      expect(skipped.steps.find((s: any) => s.node_id === 'hook')).toMatchObject({
        status: 'skipped',
        result: { reason: expect.stringContaining(ep.body.id) },
      });
      expect(received).toHaveLength(2);
    } finally {
      answers = [];
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('the Clio task and note actions', () => {
  /** start → matter → task → note on the matter; start → a note on the lead's contact (no matter on its path). */
  const clioGraph = (tag: string): { nodes: Array<Record<string, unknown>>; edges: unknown[] } => ({
    nodes: [
      {
        id: 'start',
        type: 'trigger.event',
        data: { event: 'lead.created', filter: { field: 'notes', operator: 'equals', value: tag } },
      },
      { id: 'matter', type: 'clio.create_matter', data: { description: 'Intake — {{lead.first_name}}' } },
      {
        id: 'task',
        type: 'clio.create_task',
        data: { name: 'Call {{lead.first_name}} back', description: 'About the intake.', due_in_days: 2 },
      },
      {
        id: 'matter-note',
        type: 'clio.add_note',
        data: { subject: 'Intake call', detail: '{{lead.first_name}} called about a fall.' },
      },
      {
        id: 'contact-note',
        type: 'clio.add_note',
        data: { subject: 'First contact', detail: 'Lead {{lead.first_name}} came in.' },
      },
    ],
    edges: [
      { id: 'c1', source: 'start', target: 'matter' },
      { id: 'c2', source: 'matter', target: 'task' },
      { id: 'c3', source: 'task', target: 'matter-note' },
      { id: 'c4', source: 'start', target: 'contact-note' },
    ],
  });

  it('creates the task and the notes once each (a lost answer is retried without a second task)', async () => {
    const id = await activeWorkflow(firm.client, firm.slug, 'Clio follow-up', clioGraph('clio-work'));
    // The dry run shows what each would send, and which matter the task and the note would be on.
    const dry = await firm.client.post(`/api/workflows/${id}/dry-run`, {
      event: { type: 'lead.created', data: { notes: 'clio-work' } },
    });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const dryStep = (node: string) => dry.body.path.find((s: any) => s.node_id === node);
    expect(dryStep('task')).toMatchObject({
      outcome: 'would_run',
      would_send: {
        name: 'Call back',
        description: 'About the intake.',
        assignee: { type: 'User', id: 'the connected Clio user' },
        matter_from_node: 'matter',
        reference: expect.stringMatching(/^wf_[0-9a-f]{24}$/),
      },
    });
    expect(Date.parse(dryStep('task').would_send.due_at)).toBeGreaterThan(Date.now() + DAY);
    expect(dryStep('matter-note').would_send).toMatchObject({ subject: 'Intake call', type: 'Matter' });
    expect(dryStep('contact-note').would_send).toMatchObject({ type: 'Contact', matter_from_node: null });
    expect(clio.tasks).toHaveLength(0);

    // Clio creates the task but its answer is lost (a 500 after the write): the retry finds it.
    clio.failNext.push({ status: 500, method: 'POST', path: '/api/v4/tasks.json', afterWrite: true });
    await newLead({ first_name: 'Tasha', phone: '+14155550177', notes: 'clio-work' });
    const run = await endedRun(firm.client, id);
    expect(run.status, JSON.stringify(run)).toBe('completed');
    const result = (node: string) => stepOf(run, node)[0].result;
    const matterId = result('matter').matter_id as number;
    const contactId = result('matter').contact_id as number;

    expect(clio.failNext).toEqual([]);
    expect(clio.writes('/api/v4/tasks.json')).toHaveLength(1);
    expect(clio.tasks).toHaveLength(1);
    const task = clio.tasks[0]!;
    expect(task).toMatchObject({
      name: 'Call Tasha back',
      assignee: { type: 'User', id: clio.users[0]!.id },
      matter_id: matterId,
    });
    expect(task.description).toMatch(/^About the intake\.\n\nWorkflow reference: wf_[0-9a-f]{24}$/);
    expect(Date.parse(task.due_at!)).toBeGreaterThan(Date.now() + DAY);
    expect(result('task')).toEqual({ task_id: task.id, matter_id: matterId });

    expect(clio.writes('/api/v4/notes.json')).toHaveLength(2);
    const onMatter = clio.notes.find((n) => n.type === 'Matter')!;
    expect(onMatter).toMatchObject({ subject: 'Intake call', matter_id: matterId, contact_id: contactId });
    expect(onMatter.detail).toMatch(/^Tasha called about a fall\.\n\nWorkflow reference: wf_/);
    expect(result('matter-note')).toMatchObject({ note_id: onMatter.id, type: 'Matter' });
    const onContact = clio.notes.find((n) => n.type === 'Contact')!;
    expect(onContact).toMatchObject({ subject: 'First contact', matter_id: null, contact_id: contactId });
    expect(result('contact-note')).toMatchObject({ note_id: onContact.id, type: 'Contact', matter_id: null });
    expect(clio.refusals).toEqual([]);
  });

  it('a 429 whose Retry-After (45 s) is longer than an attempt waits: the step runs again no sooner, then once', async () => {
    const id = await activeWorkflow(
      firm.client,
      firm.slug,
      'Clio follow-up, rate limited',
      clioGraph('clio-429'),
    );
    const tasksBefore = clio.tasks.length;
    clio.failNext.push({ status: 429, method: 'POST', path: '/api/v4/tasks.json', retryAfter: '45' });
    await newLead({ first_name: 'Rhea', phone: '+14155550178', notes: 'clio-429' });
    const queue = stack.services.queues.workflows;
    const { job, at } = await eventually(async () => {
      const delayed = await queue.getJobs(['delayed']);
      const found = delayed.find((j) => j.name === 'workflow-step' && /429/.test(j.failedReason ?? ''));
      expect(found).toBeDefined();
      // The delayed set's score: when it becomes due (ms) × 4096 + a counter.
      const score = await stack.services.redis.zscore(queue.keys.delayed!, found!.id!);
      return { job: found!, at: Math.floor(Number(score) / 0x1000) };
    });
    expect(clio.failNext).toEqual([]);
    const refusedAt = clio.requests
      .filter((r) => r.method === 'POST' && r.path === '/api/v4/tasks.json')
      .at(-1)!.at;
    expect(at - refusedAt).toBeGreaterThanOrEqual(45_000);
    // Not 45 s of this test: promoted, the step makes the task once.
    await job.promote();
    const run = await endedRun(firm.client, id);
    expect(run.status, JSON.stringify(run)).toBe('completed');
    expect(clio.tasks.length).toBe(tasksBefore + 1);
  });

  it('refuses a malformed task or note at activation, naming the field', async () => {
    const graph = clioGraph('clio-bad');
    graph.nodes[2]!.data = { name: 'x', due_in_days: -1, assignee_id: 'dana' };
    graph.nodes[3]!.data = { subject: 'no detail' };
    const saved = await firm.client.post('/api/workflows', { firmSlug: firm.slug, name: 'Bad', ...graph });
    expect(saved.status).toBe(200);
    const details = expectError(
      await firm.client.post(`/api/workflows/${saved.body.id}/activate`, {}),
      400,
      'invalid_request',
    );
    expect(details).toEqual([
      { path: '/nodes/2/data/due_in_days', message: expect.stringContaining('"due_in_days"') },
      { path: '/nodes/2/data/assignee_id', message: expect.stringContaining('"assignee_id"') },
      { path: '/nodes/3/data/detail', message: 'needs "detail" (node "matter-note")' },
    ]);
  });
});
