// A lost end: a dialled call whose events stopped reaching its record (the web acknowledged
// Retell's webhook, then a Redis failover lost its job; Retell does not send an acknowledged event
// again). It stayed `ongoing` for ever: its dial slot held until the lease ran out, its intake never
// taken. The lost-call sweep asks Retell how a call whose record has not changed for
// LOST_END_AFTER_MS stands (GET /v2/get-call/{call_id}, judged by Retell's own document in the
// fake), and applies what Retell reports as the webhooks would have: start, end, analysis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import { sweepLostCalls } from '../../core/domain/calls/lost-calls.js';
import { dialSlotsInUse } from '../../core/domain/pacing/dial-slots.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { retellEnv, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { SAMPLE_CALLER, conversationCall, ongoingCall } from '../fakes/retell-fixtures.js';
import { callsOf, createAgent, waitForCall } from './support.js';
import { callForProvider, postSigned } from '../webhooks/support.js';

const HOUR = 3_600_000;
/** Every dialled call is asked about; no undialled one is old enough to be a lost dial. */
const ASK_NOW = { dialAfterMs: HOUR, endAfterMs: 0 };

let fake: RetellFake;
let stack: Stack;
let firm: Firm;
let agentId: string;
beforeAll(async () => {
  fake = await startRetellFake();
  stack = await startStack({ workers: true, env: { ...retellEnv(fake) } });
  firm = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 5 });
  agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
});
afterAll(async () => {
  await stack?.stop();
  // Rejects when an answer of the fake was off Retell's document.
  await fake?.close();
});

type Firm = Awaited<ReturnType<typeof createFirm>>;
/** Who places a call: a firm and its agent. */
interface Caller {
  firm: Firm;
  agentId: string;
}

/** A call placed with the Retell fake: ours and Retell's record of it. */
async function dialledCall(
  toNumber: string,
  by: Caller = { firm, agentId },
): Promise<{ callId: string; placed: PhoneCallResponse }> {
  const res = await by.firm.client.post('/api/v2/create-outbound-call', {
    toNumber,
    agentId: by.agentId,
    firmSlug: by.firm.slug,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const callId = res.body.call_id as string;
  const call = await eventually(async () => {
    const doc = await callsOf(stack).findOne({ _id: callId });
    expect(doc?.provider_call_id).toEqual(expect.any(String));
    return doc!;
  });
  const placed = fake.calls.find((c) => c.call_id === call.provider_call_id)!;
  expect(placed.metadata).toMatchObject({ call_id: callId });
  return { callId, placed };
}

/** Retell's record of the call becomes `call` (what Retell would have told the webhook). */
function retellNowHas(placed: PhoneCallResponse, call: PhoneCallResponse): void {
  const at = fake.calls.findIndex((c) => c.call_id === placed.call_id);
  fake.calls[at] = {
    ...call,
    call_id: placed.call_id,
    agent_id: placed.agent_id,
    from_number: placed.from_number,
    to_number: placed.to_number,
    metadata: placed.metadata,
  };
}

const getCallsFor = (placed: PhoneCallResponse) =>
  fake.requestsTo('get-call').filter((r) => r.path === `/v2/get-call/${placed.call_id}`);

describe('a dialled call whose events never came', () => {
  it('is ended from what Retell reports, its analysis taken into a lead, and its dial slot freed', async () => {
    const { callId, placed } = await dialledCall('+14155550142');
    expect(await dialSlotsInUse(stack.services, firm.slug)).toContain(callId);
    // The call happened at Retell; none of its webhooks reached the service.
    retellNowHas(placed, conversationCall(SAMPLE_CALLER));

    // A record changed within LOST_END_AFTER_MS is not asked about.
    const recent = await sweepLostCalls(stack.services, { dialAfterMs: HOUR, endAfterMs: HOUR });
    expect(recent.asked).toBe(0);
    expect(getCallsFor(placed)).toEqual([]);

    const swept = await sweepLostCalls(stack.services, ASK_NOW);
    expect(swept).toMatchObject({ asked: 1, events: 2 });
    const [asked] = getCallsFor(placed);
    expect(asked).toMatchObject({ method: 'GET', problems: [] });
    expect(asked!.headers.authorization).toBe(`Bearer ${fake.apiKey}`);

    const ended = await waitForCall(firm.client, callId, (c) => c.lead_id !== null, 30_000);
    expect(ended).toMatchObject({
      status: 'ended',
      disconnection_reason: 'user_hangup',
      outcome: 'conversation',
      caller_data: { first_name: 'Pat', last_name: 'Rivera', email: 'pat@client.test' },
    });
    expect(ended.transcript).toContain('rear-ended at a red light');
    expect(ended.call_analysis.call_summary).toBe(SAMPLE_CALLER.summary);
    expect(await dialSlotsInUse(stack.services, firm.slug)).not.toContain(callId);
    // Finished: no later pass asks about it again.
    await sweepLostCalls(stack.services, ASK_NOW);
    expect(getCallsFor(placed)).toHaveLength(1);
  });

  it('takes the start of a call still on at Retell, and leaves it on until Retell ends it', async () => {
    const { callId, placed } = await dialledCall('+14155550143');
    retellNowHas(placed, ongoingCall());
    const first = await sweepLostCalls(stack.services, ASK_NOW);
    expect(first.events).toBe(1);
    const ongoing = await waitForCall(firm.client, callId, (c) => c.status === 'ongoing', 30_000);
    expect(ongoing.end_timestamp).toBeNull();

    // Still on at Retell, and ongoing here: nothing to add.
    const again = await sweepLostCalls(stack.services, ASK_NOW);
    expect(again.events).toBe(0);
    expect(getCallsFor(placed)).toHaveLength(2);
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.status).toBe('ongoing');
    expect(await dialSlotsInUse(stack.services, firm.slug)).toContain(callId);
  });

  it('leaves a call Retell does not know as it is, and goes on to the next', async () => {
    const { callId, placed } = await dialledCall('+14155550144');
    const other = await dialledCall('+14155550145');
    // Retell has no record of the first any more; the second ended unanswered.
    fake.calls.splice(
      fake.calls.findIndex((c) => c.call_id === placed.call_id),
      1,
    );
    retellNowHas(other.placed, {
      ...ongoingCall(),
      call_status: 'not_connected',
      disconnection_reason: 'dial_no_answer',
    });
    await sweepLostCalls(stack.services, ASK_NOW);
    await waitForCall(firm.client, other.callId, (c) => c.status === 'not_connected', 30_000);
    expect(getCallsFor(placed)).toHaveLength(1);
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.status).toBe('registered');
  });

  it('asks about the most recently changed first, whatever the firm: calls Retell does not know cannot keep a newly lost one waiting', async () => {
    const other = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 5 });
    const theOther: Caller = {
      firm: other,
      agentId: await createAgent(other.client, other.slug, '11labs-Adrian'),
    };
    const mine: Caller = { firm, agentId };
    // The firm a pass reads first (firms go by slug) holds a call Retell has forgotten; the other,
    // a call lost since.
    const [first, second] = firm.slug < other.slug ? [mine, theOther] : [theOther, mine];
    const unknown = await dialledCall('+14155550146', first);
    fake.calls.splice(
      fake.calls.findIndex((c) => c.call_id === unknown.placed.call_id),
      1,
    );
    const lost = await dialledCall('+14155550147', second);
    retellNowHas(lost.placed, {
      ...ongoingCall(),
      call_status: 'not_connected',
      disconnection_reason: 'dial_no_answer',
    });
    // One question this pass: the newest of the stale calls gets it, not the ones Retell has
    // forgotten (this one, and the one an earlier test left), which stay the oldest.
    const swept = await sweepLostCalls(stack.services, { ...ASK_NOW, maxAsks: 1 });
    expect(swept.asked).toBe(1);
    await waitForCall(second.firm.client, lost.callId, (c) => c.status === 'not_connected', 30_000);
    expect(getCallsFor(unknown.placed)).toHaveLength(0);
    expect((await first.firm.client.get(`/api/v2/get-call/${unknown.callId}`)).body.status).toBe(
      'registered',
    );
  });

  it('asks Retell nothing more in a pass once it answers 429, and asks again at the next pass', async () => {
    const older = await dialledCall('+14155550148');
    const newer = await dialledCall('+14155550149');
    for (const { placed } of [older, newer]) {
      retellNowHas(placed, {
        ...ongoingCall(),
        call_status: 'not_connected',
        disconnection_reason: 'dial_busy',
      });
    }
    fake.script('get-call', { status: 429, headers: { 'retry-after': '1' } });
    const busy = await sweepLostCalls(stack.services, ASK_NOW);
    expect(busy).toMatchObject({ asked: 1, events: 0 });
    // The newest was asked and refused; the older one not at all.
    expect(getCallsFor(newer.placed)).toHaveLength(1);
    expect(getCallsFor(older.placed)).toEqual([]);

    const next = await sweepLostCalls(stack.services, ASK_NOW);
    expect(next.events).toBeGreaterThanOrEqual(2);
    for (const { callId } of [older, newer]) {
      await waitForCall(firm.client, callId, (c) => c.status === 'not_connected', 30_000);
    }
  });

  it('ends an inbound call whose end never came from what Retell reports', async () => {
    const secret = 'whsec_lost_call_ends';
    const inbound = await createFirm(stack, { voice_webhook_secret: secret });
    const providerCallId = `call_inbound_${inbound.slug}`;
    const answered = retellNowHasInbound(providerCallId);
    const started = await postSigned(stack, inbound.slug, secret, {
      event: 'call_started',
      call: ongoingCall({ callId: providerCallId, direction: 'inbound', toNumber: '+14155550100' }),
    });
    expect(started.status).toBe(200);
    const call = await callForProvider(stack, inbound.slug, providerCallId);
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: call._id }))?.status).toBe('ongoing'),
    );

    const swept = await sweepLostCalls(stack.services, ASK_NOW);
    expect(swept.events).toBeGreaterThanOrEqual(2);
    expect(answered()).toHaveLength(1);
    const ended = await waitForCall(inbound.client, providerCallId, (c) => c.lead_id !== null, 30_000);
    expect(ended).toMatchObject({ status: 'ended', direction: 'inbound', outcome: 'conversation' });
  });
});

/** Retell's record of an inbound call that ended as a conversation; the get-calls asking for it. */
function retellNowHasInbound(providerCallId: string): () => unknown[] {
  fake.calls.push(
    conversationCall(SAMPLE_CALLER, {
      callId: providerCallId,
      direction: 'inbound',
      toNumber: '+14155550100',
    }),
  );
  return () => fake.requestsTo('get-call').filter((r) => r.path === `/v2/get-call/${providerCallId}`);
}
