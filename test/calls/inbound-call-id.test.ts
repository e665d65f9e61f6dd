// The call_id of a call a webhook makes or names (docs/webhooks.md#inbound-calls), over HTTP:
// an inbound call is shown and found under the provider's call_id it was sent with (get-call,
// list-calls, its lead, its call.* events), by its own firm's token and the platform's, never by
// another firm's; two firms sending one provider call_id each get their own call; a webhook naming
// a call_id create-outbound-call answered updates that call when it is the sending firm's, and
// when it is another firm's makes the sender's own inbound call and leaves that call alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundCallId } from '../../core/domain/calls/call-keys.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { eventsOf } from '../helpers/events.js';
import { callsOf, createAgent } from './support.js';
import { leadsOf, postSigned, retellCallAnalyzed, settledCall } from '../webhooks/support.js';

const SECRET_A = 'whsec_inbound_call_id_a';
const SECRET_B = 'whsec_inbound_call_id_b';

let stack: Stack;
type Firm = Awaited<ReturnType<typeof createFirm>>;
let firmA: Firm;
let firmB: Firm;
let agentA: string;

beforeAll(async () => {
  // The simulator rings for 5 minutes before its own webhooks: the events below are the tests' own.
  stack = await startStack({ workers: true, env: { SIM_CALL_MS: '600000' } });
  [firmA, firmB] = await Promise.all([
    createFirm(stack, { voice_webhook_secret: SECRET_A }),
    createFirm(stack, { voice_webhook_secret: SECRET_B }),
  ]);
  agentA = await createAgent(firmA.client, firmA.slug);
});
afterAll(() => stack?.stop());

const ENDED_AT = 1_714_000_185_000;

/** A call_ended as a sender posts it for a call it names by `callId` alone (no metadata). */
const callEnded = (callId: string, transcript: string) => ({
  event: 'call_ended',
  call: {
    call_id: callId,
    call_type: 'phone_call',
    call_status: 'ended',
    direction: 'inbound',
    from_number: '+14155550142',
    to_number: '+14155550100',
    start_timestamp: ENDED_AT - 60_000,
    end_timestamp: ENDED_AT,
    disconnection_reason: 'user_hangup',
    transcript,
  },
});

async function post(firm: Firm, secret: string, body: unknown): Promise<void> {
  const res = await postSigned(stack, firm.slug, secret, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** The call as `firm` reads it by `callId`, once get-call shows `transcript`. */
const shownWith = (firm: Firm, callId: string, transcript: string) =>
  eventually(async () => {
    const res = await firm.client.get(`/api/v2/get-call/${encodeURIComponent(callId)}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.transcript).toBe(transcript);
    return res.body;
  });

/**
 * The firm's list-calls rows of `callId`, once there is one: the job that finishes a call adds its
 * list entry after it writes the call (onCallFinished), so get-call can show it ended first.
 */
const listed = (firm: Firm, callId: string) =>
  eventually(async () => {
    const res = await firm.client.post('/api/v2/list-calls', { firmSlug: firm.slug, limit: 1000 });
    expect(res.status).toBe(200);
    const rows = (res.body.calls as Array<{ call_id: string }>).filter((c) => c.call_id === callId);
    expect(rows, `${callId} in list-calls`).not.toEqual([]);
    return rows;
  });

async function createOutbound(): Promise<string> {
  const res = await firmA.client.post('/api/v2/create-outbound-call', {
    toNumber: '+14155550123',
    agentId: agentA,
    firmSlug: firmA.slug,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.call_id as string;
}

describe('an inbound call is shown under the provider call_id it was sent with', () => {
  it('get-call and list-calls find it by that id; its lead and its call.* events name it so', async () => {
    const pid = `inbound-abc-${rand()}`;
    await post(firmA, SECRET_A, callEnded(pid, 'User: Hello?\n'));
    const call = await shownWith(firmA, pid, 'User: Hello?\n');
    expect(call).toMatchObject({
      call_id: pid,
      firm: firmA.slug,
      direction: 'inbound',
      status: 'ended',
      end_timestamp: ENDED_AT,
    });
    // Stored under the firm-scoped hash; shown under the provider's id.
    const stored = (await callsOf(stack).findOne({ _id: inboundCallId(firmA.slug, pid) }))!;
    expect(stored).toMatchObject({ firm: firmA.slug, provider_call_id: pid, call_id: pid });
    expect(await listed(firmA, pid)).toEqual([call]);

    // The platform's key finds it too; another firm's token does not.
    expect((await stack.admin.get(`/api/v2/get-call/${pid}`)).body).toEqual(call);
    expectError(await firmB.client.get(`/api/v2/get-call/${pid}`), 404, 'call_not_found');

    // Analysed: its effects on get-call by that id, its lead and its events name it so.
    await post(firmA, SECRET_A, retellCallAnalyzed({ providerCallId: pid }));
    const settled = await settledCall(firmA.client, pid);
    expect(settled.call_id).toBe(pid);
    expect(settled.effects.lead).toBe('done');
    expect((await firmA.client.get(`/api/leads/${settled.lead_id}`)).body.call_id).toBe(pid);
    const events = await eventually(async () => {
      const ofCall = await eventsOf(stack, firmA.slug, pid);
      expect(ofCall.map((e) => e.type).sort()).toEqual(['call.analyzed', 'call.ended']);
      return ofCall;
    });
    for (const event of events) expect(event.data.call_id).toBe(pid);
  });

  it('a second firm sending the same provider call_id gets its own call; neither sees the other’s', async () => {
    const pid = `inbound-shared-${rand()}`;
    await post(firmA, SECRET_A, callEnded(pid, 'User: This is firm A calling.\n'));
    const ofA = await shownWith(firmA, pid, 'User: This is firm A calling.\n');
    await post(firmB, SECRET_B, callEnded(pid, 'User: This is firm B calling.\n'));
    const ofB = await shownWith(firmB, pid, 'User: This is firm B calling.\n');

    expect(ofB).toMatchObject({ call_id: pid, firm: firmB.slug });
    expect((await firmA.client.get(`/api/v2/get-call/${pid}`)).body).toEqual(ofA);
    expect(await listed(firmA, pid)).toEqual([ofA]);
    expect(await listed(firmB, pid)).toEqual([ofB]);
    expect(await callsOf(stack).countDocuments({ provider_call_id: pid })).toBe(2);
  });

  it('list-calls breaks ties of end_timestamp by that call_id, descending, across pages', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET_A });
    const base = `tie-${rand()}`;
    const pids = ['a', 'b', 'c', 'd', 'e'].map((x) => `${base}-${x}`);
    for (const pid of pids) await post(firm, SECRET_A, callEnded(pid, `User: ${pid}\n`));
    for (const pid of pids) await shownWith(firm, pid, `User: ${pid}\n`);
    const seen: string[] = [];
    let cursor = '';
    do {
      const res = await firm.client.post('/api/v2/list-calls', { firmSlug: firm.slug, limit: 2, cursor });
      expect(res.status).toBe(200);
      seen.push(...(res.body.calls as Array<{ call_id: string }>).map((c) => c.call_id));
      cursor = res.body.next_cursor as string;
    } while (cursor !== '' && seen.length < 10);
    expect(seen).toEqual([...pids].reverse());
  });
});

describe('a webhook naming a call_id create-outbound-call answered', () => {
  it('of the sending firm: updates that call, no second one', async () => {
    const callId = await createOutbound();
    await post(firmA, SECRET_A, callEnded(callId, 'Agent: Hello from our own call.\n'));
    const call = await shownWith(firmA, callId, 'Agent: Hello from our own call.\n');
    expect(call).toMatchObject({ call_id: callId, direction: 'outbound', status: 'ended' });
    expect(await callsOf(stack).findOne({ _id: inboundCallId(firmA.slug, callId) })).toBeNull();
    expect(await callsOf(stack).countDocuments({ firm: firmA.slug, call_id: callId })).toBe(1);
    expect(await listed(firmA, callId)).toEqual([call]);
  });

  it('of another firm: the sender gets its own inbound call under that id; the call is not touched', async () => {
    const callId = await createOutbound();
    const before = (await firmA.client.get(`/api/v2/get-call/${callId}`)).body;
    await post(firmB, SECRET_B, callEnded(callId, 'User: Firm B naming firm A’s call.\n'));
    const ofB = await shownWith(firmB, callId, 'User: Firm B naming firm A’s call.\n');
    expect(ofB).toMatchObject({ call_id: callId, firm: firmB.slug, direction: 'inbound' });
    expect(await listed(firmB, callId)).toEqual([ofB]);

    const ofA = (await callsOf(stack).findOne({ _id: callId }))!;
    expect(ofA).toMatchObject({ firm: firmA.slug, transcript: null, finished: false });
    expect((await firmA.client.get(`/api/v2/get-call/${callId}`)).body).toMatchObject({
      call_id: callId,
      firm: firmA.slug,
      transcript: null,
      status: before.status,
    });
    // The platform reads the call whose id it is: firm A's.
    expect((await stack.admin.get(`/api/v2/get-call/${callId}`)).body.firm).toBe(firmA.slug);
    expect(await leadsOf(stack).countDocuments({ firm: firmA.slug, call_id: callId })).toBe(0);
  });
});
