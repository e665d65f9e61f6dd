// Workflows that run (docs/workflows.md#runs), on real peers: the example graph as a flow builder
// saves it runs end to end (the Clio matter, the mail, a day's wait on a short configured unit,
// the call through the simulator); a `wait_for` takes its `matched` branch when the booking
// webhook comes in time and its `timeout` branch when not; a cycle through a `wait` stops at the
// firm's bound and says so; an opted-out number stops the call step; activation checks the graph
// and versions keep runs apart; the dry run walks the example without any effect, and its output
// is the one docs/workflows.md shows.
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createAgent } from '../calls/support.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import type { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
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

async function activeWorkflow(client: ApiClient, firmSlug: string, name: string, graph: { nodes: unknown[]; edges: unknown[] }) {
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
    // The wait was a day of workflow time.
    const wait = stepOf(run, 'a-day')[0];
    expect(Date.parse(wait.result.resume_at) - Date.parse(wait.started_at)).toBeGreaterThanOrEqual(DAY - 1000);

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
    expect(call.body).toMatchObject({ to_number: '+14155550142', dynamic_variables: { reason: 'follow-up on your accident' } });
    // The sticky note is kept in the graph and never becomes a step.
    expect(stepOf(run, 'sticky-1')).toEqual([]);
  });
});
