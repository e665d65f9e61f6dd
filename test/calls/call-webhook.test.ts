// POST /api/v2/{firm}/webhook (docs/webhooks.md): bearer or x-retell-signature authentication,
// the request only enqueues, and the worker applies call_started / call_ended / call_analyzed
// forward-only (repeats and out-of-order deliveries change nothing), creating inbound calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices } from '../../core/wiring/services.js';
import { newOutboundCall } from '../../core/domain/calls/calls.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { startWorkers, type Workers } from '../../workers/runner.js';
import { processors } from '../../workers/processors/index.js';
import { createFirm, freshMongoUri, rand, startStack, type Stack } from '../helpers/stack.js';
import type { CommandStartedEvent } from 'mongodb';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { deliveredCallEvents, expectOutboxEmpty } from '../helpers/webhook-outbox.js';
import { callsOf, createAgent } from './support.js';

const SECRET = 'whsec_call_webhook_test_secret';

let stack: Stack;
let workers: Workers | undefined;
let firm: Awaited<ReturnType<typeof createFirm>>;
let other: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

// Command monitoring on: a test below counts the workers' reads of a call.
const monitoredUri = (): string => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  return uri.toString();
};

beforeAll(async () => {
  stack = await startStack({ env: { MONGODB_URI: monitoredUri() } }); // workers start after the enqueue-only test
  firm = await createFirm(stack, { voice_webhook_secret: SECRET });
  other = await createFirm(stack);
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
});

let workerServices: ReturnType<typeof createServices> | undefined;
/** The workers, started once: after the enqueue-only test, or by any later block run on its own. */
function startWorkersOnce(): void {
  workerServices ??= createServices(stack.config, createLogger('silent', 'test'), 'worker');
  workers ??= startWorkers(workerServices, processors);
}

/** One of our outbound calls, written directly (no simulator playing it meanwhile). */
async function ourCall(): Promise<string> {
  const db = stack.services.mongo.db;
  const firmDoc = (await getFirm(db, firm.slug))!;
  const agent = (await db.collection<AgentDoc>(COLLECTIONS.agents).findOne({ _id: agentId }))!;
  const doc = newOutboundCall({ firm: firmDoc, agent, toNumber: '+14155550123' }, 'retell');
  await callsOf(stack).insertOne(doc);
  return doc._id;
}

const providerCall = (
  callId: string | undefined,
  providerId: string,
  fields: Record<string, unknown> = {},
) => ({
  call_id: providerId,
  call_type: 'phone_call',
  agent_id: 'retell_agent_1',
  direction: 'outbound',
  from_number: '+14155550100',
  to_number: '+14155550123',
  ...(callId === undefined ? {} : { metadata: { call_id: callId, firm: firm.slug } }),
  ...fields,
});

function signedPost(slug: string, body: unknown, signature?: (raw: string) => string) {
  const raw = JSON.stringify(body);
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      'x-retell-signature': (signature ?? ((r) => signRetellWebhook(r, SECRET)))(raw),
    },
  });
}

const flipLastHex = (signature: string) => signature.slice(0, -1) + (signature.endsWith('0') ? '1' : '0');
const send = (body: unknown) => signedPost(firm.slug, body);
/**
 * Waits until no call event is waiting, running or delayed, nor kept in the webhook outbox: an add
 * slower than ENQUEUE_TIMEOUT_MS (a loaded machine) keeps a delivery there, and the stack's later
 * ones too, until the workers' drain moves them to the queue.
 */
const eventsDrained = () =>
  eventually(async () => {
    await expectOutboxEmpty(stack);
    const counts = await stack.services.queues['call-events'].getJobCounts('waiting', 'active', 'delayed');
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
  });
/** The deliveries of a provider call: jobs in the queue (done ones too) and outbox entries. */
const deliveriesOf = async (providerCallId: string) => {
  const { jobs, kept } = await deliveredCallEvents(stack, [providerCallId], { completed: true });
  return [...jobs.map((j) => j.id!), ...kept.map((entry) => entry.delivery!)];
};

describe('call webhook: the request only stores and enqueues', () => {
  it('answers {received: true} with one job per event and call, before any worker runs', async () => {
    const callId = await ourCall();
    const pid = `p_${rand()}`;
    const event = {
      event: 'call_started',
      call: providerCall(callId, pid, { start_timestamp: 1_700_000_000_000 }),
    };
    const first = await send(event);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ received: true });
    expect((await send(event)).body).toEqual({ received: true });
    // One delivery, the repeat a no-op: its job, or, had its add taken longer than
    // ENQUEUE_TIMEOUT_MS (a loaded machine), its outbox entry (a repeat, in the queue or
    // kept, has the same job id).
    expect(new Set(await deliveriesOf(pid))).toEqual(new Set([`evt|${firm.slug}|call_started|${pid}`]));
    expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('registered');

    startWorkersOnce();
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('ongoing'),
    );
  });
});

describe('call webhook authentication', () => {
  const body = () => ({ event: 'call_started', call: providerCall(undefined, `p_${rand()}`) });

  it('accepts a valid x-retell-signature', async () => {
    expect((await send(body())).status).toBe(200);
  });

  it('rejects a wrong secret, a tampered body, a stale or future timestamp, garbage, and no credentials (401)', async () => {
    const now = Date.now();
    const attempts = [
      signedPost(firm.slug, body(), (raw) => signRetellWebhook(raw, 'not-the-secret')),
      signedPost(firm.slug, body(), (raw) => signRetellWebhook(`${raw} `, SECRET)),
      signedPost(firm.slug, body(), (raw) => signRetellWebhook(raw, SECRET, now - 6 * 60 * 1000)),
      signedPost(firm.slug, body(), (raw) => signRetellWebhook(raw, SECRET, now + 6 * 60 * 1000)),
      signedPost(firm.slug, body(), () => 'v=abc,d=zz'),
      signedPost(firm.slug, body(), (raw) => flipLastHex(signRetellWebhook(raw, SECRET))),
      stack.api.post(`/api/v2/${firm.slug}/webhook`, body()),
    ];
    for (const res of await Promise.all(attempts)) expectError(res, 401, 'unauthorized');
  });

  it('accepts a signature 4 minutes old (within the 5-minute window)', async () => {
    const res = await signedPost(firm.slug, body(), (raw) =>
      signRetellWebhook(raw, SECRET, Date.now() - 4 * 60 * 1000),
    );
    expect(res.status).toBe(200);
  });

  it('rejects a signature for a firm without voice_webhook_secret (401)', async () => {
    expectError(await signedPost(other.slug, body()), 401, 'unauthorized');
  });

  it('accepts the firm’s own token and the platform key; another firm’s token is 403; a bad token 401', async () => {
    expect((await firm.client.post(`/api/v2/${firm.slug}/webhook`, body())).status).toBe(200);
    expect((await stack.admin.post(`/api/v2/${firm.slug}/webhook`, body())).status).toBe(200);
    expectError(await other.client.post(`/api/v2/${firm.slug}/webhook`, body()), 403, 'forbidden');
    expectError(
      await stack.api.withToken('isk_not_a_key').post(`/api/v2/${firm.slug}/webhook`, body()),
      401,
      'unauthorized',
    );
  });

  it('an unknown firm is 404 firm_not_found with a bearer token; with only a signature, 401 as a wrong one', async () => {
    expectError(await stack.admin.post('/api/v2/no-such-firm/webhook', body()), 404, 'firm_not_found');
    expectError(await signedPost('no-such-firm', body()), 401, 'unauthorized');
  });
});

describe('call webhook body', () => {
  it('requires call.call_id (400) and an object for call', async () => {
    const missing = await send({ event: 'call_started', call: { call_status: 'ongoing' } });
    expectError(missing, 400, 'invalid_request');
    expect(detailPaths(missing)).toContain('/call/call_id');
    expect(detailPaths(await send({ event: 'call_started', call: 'abc' }))).toContain('/call');
    expect(detailPaths(await send({ call: { call_id: 'x' } }))).toContain('/event');
  });

  it('accepts unknown fields at every level', async () => {
    const res = await send({
      event: 'call_started',
      sent_at: 123,
      call: { ...providerCall(undefined, `p_${rand()}`), brand_new_field: { nested: true } },
    });
    expect(res.status).toBe(200);
  });

  it('acknowledges and ignores other events', async () => {
    const callId = await ourCall();
    const pid = `p_${rand()}`;
    const res = await send({
      event: 'transcript_updated',
      call: providerCall(callId, pid, { call_status: 'ended' }),
    });
    expect(res.body).toEqual({ received: true });
    expect(await deliveriesOf(pid)).toEqual([]);
    expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('registered');
  });
});

describe('applying call events', () => {
  beforeAll(startWorkersOnce);

  it('call_started then call_ended update the record; a late or repeated event changes nothing', async () => {
    const callId = await ourCall();
    const pid = `p_${rand()}`;
    await send({
      event: 'call_started',
      call: providerCall(callId, pid, { call_status: 'ongoing', start_timestamp: 1_700_000_000_000 }),
    });
    await eventually(async () => {
      const call = await firm.client.get(`/api/v2/get-call/${callId}`);
      expect(call.body).toMatchObject({
        status: 'ongoing',
        start_timestamp: 1_700_000_000_000,
        end_timestamp: null,
      });
    });
    expect((await callsOf(stack).findOne({ _id: callId }))?.provider_call_id).toBe(pid);

    const ended = {
      call_status: 'ended',
      start_timestamp: 1_700_000_000_000,
      end_timestamp: 1_700_000_090_000,
      duration_ms: 90_000,
      disconnection_reason: 'agent_hangup',
      transcript: 'Agent: Hello\nUser: Hi\n',
    };
    await send({ event: 'call_ended', call: providerCall(callId, pid, ended) });
    await eventually(async () =>
      expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.status).toBe('ended'),
    );
    const after = (await firm.client.get(`/api/v2/get-call/${callId}`)).body;
    const { call_status: _status, ...fields } = ended;
    expect(after).toMatchObject({ ...fields, status: 'ended' });

    // Delivered again after the end (Retell retries deliveries): nothing changes.
    await send({
      event: 'call_started',
      call: providerCall(callId, pid, { call_status: 'ongoing', start_timestamp: 1_800_000_000_000 }),
    });
    await eventsDrained();
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body).toEqual(after);
  });

  it('call_ended before call_started (out of order) ends the call, and the late start is ignored', async () => {
    const callId = await ourCall();
    const pid = `p_${rand()}`;
    await send({
      event: 'call_ended',
      call: providerCall(callId, pid, {
        call_status: 'not_connected',
        disconnection_reason: 'dial_busy',
        end_timestamp: 1_700_000_000_500,
      }),
    });
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('not_connected'),
    );
    await send({
      event: 'call_started',
      call: providerCall(callId, pid, { call_status: 'ongoing', start_timestamp: 1_700_000_000_000 }),
    });
    await eventsDrained();
    const call = await callsOf(stack).findOne({ _id: callId });
    expect(call).toMatchObject({
      status: 'not_connected',
      disconnection_reason: 'dial_busy',
      start_timestamp: null,
    });
  });

  it('call_analyzed stores the analysis on the call (also when it comes first)', async () => {
    const callId = await ourCall();
    const analysis = {
      call_summary: 'Caller asked about a dog bite.',
      user_sentiment: 'Neutral',
      call_successful: true,
      custom_analysis_data: { name: 'Sam Ray', case_type: 'dog bite', $where: 'dropped', 'a.b': 'dropped' },
    };
    await send({
      event: 'call_analyzed',
      call: providerCall(callId, `p_${rand()}`, {
        call_status: 'ended',
        start_timestamp: 1_700_000_000_000,
        end_timestamp: 1_700_000_060_000,
        call_analysis: analysis,
      }),
    });
    const call = await eventually(async () => {
      const res = await firm.client.get(`/api/v2/get-call/${callId}`);
      expect(res.body.call_analysis).not.toBeNull();
      return res.body;
    });
    expect(call.status).toBe('ended');
    expect(call.duration_ms).toBe(60_000);
    expect(call.call_analysis).toEqual({
      ...analysis,
      custom_analysis_data: { name: 'Sam Ray', case_type: 'dog bite' },
    });
  });

  it('creates an unknown (inbound) call once, even when its events are applied concurrently', async () => {
    const pids = Array.from({ length: 10 }, () => `inbound_${rand()}`);
    const inbound = (pid: string, event: string, fields: Record<string, unknown>) =>
      send({
        event,
        call: {
          ...providerCall(undefined, pid),
          direction: 'inbound',
          from_number: '+14155557777',
          to_number: '+14155550100',
          ...fields,
        },
      });
    const ended = {
      call_status: 'ended',
      start_timestamp: 1_700_000_000_000,
      end_timestamp: 1_700_000_030_000,
    };
    // Every event of every call at once: the worker runs them concurrently, in any order.
    await Promise.all(
      pids.flatMap((pid) => [
        inbound(pid, 'call_started', { call_status: 'ongoing', start_timestamp: 1_700_000_000_000 }),
        inbound(pid, 'call_ended', ended),
        inbound(pid, 'call_analyzed', { ...ended, call_analysis: { call_summary: `About ${pid}` } }),
      ]),
    );
    await eventsDrained();
    for (const pid of pids) {
      const rows = await callsOf(stack).find({ firm: firm.slug, provider_call_id: pid }).toArray();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        direction: 'inbound',
        status: 'ended',
        from_number: '+14155557777',
        duration_ms: 30_000,
        call_analysis: { call_summary: `About ${pid}` },
      });
    }
    const row = (await callsOf(stack).findOne({ provider_call_id: pids[0] }))!;
    expect((await firm.client.get(`/api/v2/get-call/${row._id}`)).body.direction).toBe('inbound');
    expectError(await other.client.get(`/api/v2/get-call/${row._id}`), 404, 'call_not_found');
  });

  it('an inbound call on an agent by its provider agent id shows our agent_id, the one get-agent reads', async () => {
    const mapped = await createAgent(firm.client, firm.slug);
    const providerAgentId = `agent_retell_${rand()}`;
    const patched = await stack.admin.patch(`/api/v2/update-agent/${mapped}`, {
      provider_agent_id: providerAgentId,
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const pid = `inbound_${rand()}`;
    await send({
      event: 'call_started',
      call: {
        ...providerCall(undefined, pid),
        agent_id: providerAgentId,
        direction: 'inbound',
        from_number: '+14155557771',
        to_number: '+14155550100',
        call_status: 'ongoing',
        start_timestamp: 1_700_000_000_000,
      },
    });
    const call = await eventually(async () => {
      const res = await firm.client.get(`/api/v2/get-call/${pid}`);
      expect(res.status).toBe(200);
      return res.body;
    });
    expect(call.agent_id).toBe(mapped);
    expect((await firm.client.get(`/api/v2/get-agent/${call.agent_id}`)).body.agent_id).toBe(mapped);
    // An agent id the firm has no agent for is kept as the sender named it.
    const unknown = `inbound_${rand()}`;
    await send({
      event: 'call_started',
      call: {
        ...providerCall(undefined, unknown),
        agent_id: 'agent_nobody_has',
        direction: 'inbound',
        call_status: 'ongoing',
      },
    });
    const kept = await eventually(async () => {
      const res = await firm.client.get(`/api/v2/get-call/${unknown}`);
      expect(res.status).toBe(200);
      return res.body;
    });
    expect(kept.agent_id).toBe('agent_nobody_has');
  });

  it("metadata naming another firm's call does not touch that call", async () => {
    const db = stack.services.mongo.db;
    const otherFirm = (await getFirm(db, other.slug))!;
    const otherAgent = await createAgent(other.client, other.slug);
    const agent = (await db.collection<AgentDoc>(COLLECTIONS.agents).findOne({ _id: otherAgent }))!;
    const victim = newOutboundCall({ firm: otherFirm, agent, toNumber: '+14155550123' }, 'retell');
    await callsOf(stack).insertOne(victim);
    const pid = `p_${rand()}`;
    await send({
      event: 'call_ended',
      call: providerCall(victim._id, pid, { call_status: 'ended', end_timestamp: 1 }),
    });
    await eventually(async () =>
      expect(await callsOf(stack).countDocuments({ firm: firm.slug, provider_call_id: pid })).toBe(1),
    );
    expect((await callsOf(stack).findOne({ _id: victim._id }))?.status).toBe('registered');
  });

  it('an event naming our call in its metadata reads that call once', async () => {
    const callId = await ourCall();
    const pid = `p_${rand()}`;
    const reads: unknown[] = [];
    const listener = (e: CommandStartedEvent) => {
      const command = e.command as { find?: string; filter?: { _id?: unknown } };
      if (command.find === COLLECTIONS.calls && command.filter?._id === callId) reads.push(command.filter);
    };
    const client = workerServices!.mongo.client;
    client.on('commandStarted', listener);
    try {
      await send({
        event: 'call_ended',
        call: providerCall(callId, pid, { call_status: 'ended', end_timestamp: 1_700_000_090_000 }),
      });
      await eventsDrained();
    } finally {
      client.off('commandStarted', listener);
    }
    expect((await callsOf(stack).findOne({ _id: callId }))?.status).toBe('ended');
    // Found through its metadata and read under its lock in one read, not a read of its firm
    // first and the whole call again.
    expect(reads).toHaveLength(1);
  });
});
