// The simulator (docs/calls.md#the-simulator) as a real participant: a placed call is answered, talks and
// hangs up, and each step reaches the firm's public webhook over HTTP, signed as Retell signs
// (or with the platform key as bearer). A proxy in front of the service records what went over
// the wire and holds call_ended so the test can see the call ongoing without sleeping.
import { verify as retellVerify } from 'retell-sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { voiceWebhookSecret } from '../../core/domain/calls/webhook-secret.js';
import { subjectLeadId } from '../../core/domain/leads/leads.js';
import { startWebhookProxy, type WebhookProxy } from '../fakes/webhook-proxy.js';
import { JOBS } from '../../jobs/table.js';
import { callsOf, createAgent, simulatorCallsOf, waitForCall } from './support.js';

const SECRET = 'whsec_simulated_calls_test';

let proxy: WebhookProxy;
let stack: Stack;
let signed: Awaited<ReturnType<typeof createFirm>>;
let bearer: Awaited<ReturnType<typeof createFirm>>;
let signedAgent: string;
let bearerAgent: string;

beforeAll(async () => {
  proxy = await startWebhookProxy();
  stack = await startStack({ workers: true, env: { PUBLIC_BASE_URL: proxy.url, SIM_CALL_MS: '200' } });
  proxy.target = stack.baseUrl;
  signed = await createFirm(stack, { voice_webhook_secret: SECRET, from_number: '+14155550100' });
  bearer = await createFirm(stack);
  signedAgent = await createAgent(signed.client, signed.slug);
  bearerAgent = await createAgent(bearer.client, bearer.slug);
});
// A test that failed midway must not leave its held events holding the next test's calls.
afterEach(() => proxy?.releaseAll());
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
});

const deliveriesFor = (callId: string) =>
  proxy.deliveries.filter((d) => d.body?.call?.metadata?.call_id === callId);

describe('a simulated call', () => {
  it('goes registered → ongoing → ended through signed webhooks and appears in list-calls', async () => {
    // Each step waits at the proxy until the test has seen the one before (the simulator's ring
    // is 100 ms here: a loaded machine's next request could come after it).
    proxy.holdEvent('call_started');
    proxy.holdEvent('call_ended');
    const created = await signed.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId: signedAgent,
      firmSlug: signed.slug,
      dynamicVariables: { full_name: 'Maria Lopez', case_type: 'workers compensation', injury: 'yes' },
    });
    expect(created.body).toEqual({ call_id: expect.any(String), status: 'registered' });
    const callId = created.body.call_id;
    expect((await signed.client.get(`/api/v2/get-call/${callId}`)).body.status).toBe('registered');
    // The simulator's job carries the call as placed (its answer, held above, has not been
    // written): the answer starts from it, not from a read.
    const carried = await eventually(async () => {
      const job = await stack.services.queues.simulator.getJob(
        JOBS.simulatorStep.id!({ callId, providerCallId: '' }),
      );
      expect(job?.data.call).toBeDefined();
      return job!.data.call!;
    });
    expect(carried).toMatchObject({
      _id: expect.stringMatching(/^sim_/),
      call_status: 'registered',
      delivered: [],
      metadata: { call_id: callId, firm: signed.slug },
      retell_llm_dynamic_variables: { full_name: 'Maria Lopez' },
    });
    expect(carried).not.toHaveProperty('created_at');
    proxy.release('call_started');

    const ongoing = await waitForCall(signed.client, callId, (c) => c.status === 'ongoing');
    expect(ongoing.start_timestamp).toEqual(expect.any(Number));
    expect(ongoing.end_timestamp).toBeNull();
    proxy.release('call_ended');

    const ended = await waitForCall(
      signed.client,
      callId,
      // Settled: the call_analyzed effects (core/domain/call-analysis) have run, so the record
      // compared with list-calls below no longer changes.
      (c) =>
        c.status === 'ended' && c.call_analysis !== null && !Object.values(c.effects).includes('pending'),
    );
    expect(ended.end_timestamp).toBeGreaterThanOrEqual(ended.start_timestamp);
    expect(ended.duration_ms).toBe(ended.end_timestamp - ended.start_timestamp);
    expect(ended.from_number).toBe('+14155550100');
    expect(ended.disconnection_reason).toBe('user_hangup');
    // The transcript follows the agent's intake questions, answered from the dynamic variables.
    expect(ended.transcript).toContain('Agent: Hi, this is the intake line of the firm.');
    expect(ended.transcript).toContain('Agent: May I have your full name?\nUser: Maria Lopez');
    expect(ended.transcript).toContain('Agent: What number can we reach you on?\nUser: +14155550123');
    expect(ended.transcript).toContain('User: workers compensation');
    expect(ended.call_analysis).toMatchObject({
      call_summary: expect.stringContaining('Maria Lopez'),
      call_successful: true,
      user_sentiment: 'Positive',
      custom_analysis_data: {
        full_name: 'Maria Lopez',
        phone: '+14155550123',
        case_type: 'workers compensation',
        injury: 'yes',
      },
    });

    // On the wire: Retell's envelope, in order, each signed with the firm's secret. The proxy notes
    // a delivery's status once the service's answer is back, which can come after the worker has
    // applied the event (the webhook answers after queueing it).
    const sent = await eventually(async () => {
      const found = deliveriesFor(callId);
      expect(found.map((d) => d.status)).not.toContain(undefined);
      return found;
    });
    expect(sent.map((d) => d.body.event)).toEqual(['call_started', 'call_ended', 'call_analyzed']);
    for (const d of sent) {
      expect(d.path).toBe(`/api/v2/${signed.slug}/webhook`);
      expect(d.headers.authorization).toBeUndefined();
      expect(d.headers['x-retell-signature']).toMatch(/^v=\d+,d=[0-9a-f]{64}$/);
      expect(await retellVerify(d.rawBody, SECRET, d.headers['x-retell-signature'] as string)).toBe(true);
      expect(d.status).toBe(200);
      expect(d.body.call).toMatchObject({
        call_id: expect.stringMatching(/^sim_/),
        agent_id: signedAgent,
        metadata: { call_id: callId, firm: signed.slug },
        retell_llm_dynamic_variables: { full_name: 'Maria Lopez' },
      });
    }
    expect(sent[0]!.body.call.call_status).toBe('ongoing');
    expect(sent[1]!.body.call).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(sent[1]!.body.call.transcript).toBe(ended.transcript);
    expect(sent[2]!.body.call.call_analysis).toEqual(ended.call_analysis);

    // The provider id is recorded on our call, and the call is listed first.
    const stored = await callsOf(stack).findOne({ _id: callId });
    expect(stored?.provider_call_id).toBe(sent[0]!.body.call.call_id);
    const list = await signed.client.post('/api/v2/list-calls', { firmSlug: signed.slug });
    expect(list.status).toBe(200);
    expect(list.body.calls[0]).toEqual(ended);
    expect(list.body.next_cursor).toBe('');
  });

  it('signs with a key derived for the simulator when the firm has no voice_webhook_secret; the platform key never leaves the process', async () => {
    const created = await bearer.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550124',
      agentId: bearerAgent,
      firmSlug: bearer.slug,
    });
    const callId = created.body.call_id;
    await waitForCall(bearer.client, callId, (c) => c.status === 'ended' && c.call_analysis !== null);
    const sent = deliveriesFor(callId);
    expect(sent.length).toBe(3);
    const derived = voiceWebhookSecret(stack.config, bearer.slug, undefined)!;
    expect(derived).not.toContain(stack.config.adminApiKey);
    for (const d of sent) {
      expect(d.headers.authorization).toBeUndefined();
      expect(await retellVerify(d.rawBody, derived, d.headers['x-retell-signature'] as string)).toBe(true);
      expect(JSON.stringify(d)).not.toContain(stack.config.adminApiKey);
    }
  });

  it('retries a webhook delivery that was not accepted, without resending what was delivered', async () => {
    proxy.failNext('call_ended', 1);
    const created = await bearer.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550125',
      agentId: bearerAgent,
      firmSlug: bearer.slug,
    });
    const callId = created.body.call_id;
    await waitForCall(bearer.client, callId, (c) => c.status === 'ended' && c.call_analysis !== null);
    // The proxy notes a delivery's status once the service's answer is back, and the service
    // answers after queueing the event: the worker can store the analysis before that answer
    // reaches the proxy.
    await eventually(async () =>
      expect(deliveriesFor(callId).map((d) => [d.body.event, d.status])).toEqual([
        ['call_started', 200],
        ['call_ended', 503],
        ['call_ended', 200],
        ['call_analyzed', 200],
      ]),
    );
  });

  // +1 555 555 0000, the test writer's favourite, is a possible number (no area code: in the US).
  it.each(['+14155550000', '+15555550000'])(
    'a number ending 0000 is not answered (%s): not_connected, dial_no_answer, no call_started',
    async (toNumber) => {
      const created = await bearer.client.post('/api/v2/create-outbound-call', {
        toNumber,
        agentId: bearerAgent,
        firmSlug: bearer.slug,
      });
      expect(created.body, JSON.stringify(created.body)).toEqual({
        call_id: expect.any(String),
        status: 'registered',
      });
      const callId = created.body.call_id;
      const call = await waitForCall(bearer.client, callId, (c) => c.status === 'not_connected');
      expect(call.disconnection_reason).toBe('dial_no_answer');
      expect(call.start_timestamp).toBeNull();
      expect(call.end_timestamp).toEqual(expect.any(Number));
      expect(deliveriesFor(callId).map((d) => d.body.event)).toEqual(['call_ended']);
      // The call's list entry is added after its status is written (onCallFinished).
      await eventually(async () => {
        const list = await bearer.client.post('/api/v2/list-calls', { firmSlug: bearer.slug });
        expect(list.body.calls.map((c: any) => c.call_id)).toContain(callId);
      });
    },
  );

  it('a call to a possible number of no area code (+1 555) makes a lead with that number', async () => {
    // The caller says the number they were called on; libphonenumber does not call it valid, but
    // the service dialled it, so the lead keeps it (extraction.ts's counterpart number).
    const toNumber = '+15555550123';
    const created = await bearer.client.post('/api/v2/create-outbound-call', {
      toNumber,
      agentId: bearerAgent,
      firmSlug: bearer.slug,
      dynamicVariables: { full_name: 'Dana Reyes' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const callId = created.body.call_id as string;
    await waitForCall(
      bearer.client,
      callId,
      (c) =>
        c.status === 'ended' && c.call_analysis !== null && !Object.values(c.effects).includes('pending'),
    );
    const lead = await bearer.client.get(`/api/leads/${subjectLeadId('call', callId)}`);
    expect(lead.status, JSON.stringify(lead.body)).toBe(200);
    expect(lead.body).toMatchObject({ source: 'call', call_id: callId, phone: toNumber });
  });

  it('a number ending 9999 fails at the provider: error, not dialled again, no webhooks', async () => {
    const created = await bearer.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155559999',
      agentId: bearerAgent,
      firmSlug: bearer.slug,
    });
    const callId = created.body.call_id;
    const call = await waitForCall(bearer.client, callId, (c) => c.status === 'error');
    expect(call.end_timestamp).toEqual(expect.any(Number));
    expect(call.disconnection_reason).toBe('dial_failed');
    await eventually(async () => {
      const job = await stack.services.queues.calls.getJob(callId);
      expect(await job?.getState()).toBe('failed');
      expect(job?.attemptsMade).toBe(1);
    });
    expect(await simulatorCallsOf(stack).countDocuments({ 'metadata.call_id': callId })).toBe(0);
    expect(deliveriesFor(callId)).toEqual([]);
    const list = await bearer.client.post('/api/v2/list-calls', { firmSlug: bearer.slug });
    expect(list.body.calls.map((c: any) => c.call_id)).toContain(callId);
  });
});
