// An opt-out heard in a call is on the firm's do-not-call list before get-call shows the call
// finished: a client that polls get-call until the call ended, then lists the numbers or calls
// the person again at once, finds the number listed and the call refused (409 dial_blocked).
// The job's write of the entry is held back at the database (a relay in front of FerretDB), so
// the test sees what a client reading between the job's writes would see.
import { describe, expect, it } from 'vitest';
import { newOutboundCall, type CallDoc } from '../../core/domain/calls/calls.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { createFirm, rand } from '../helpers/stack.js';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';
import { expectError } from '../helpers/expect-error.js';
import { callsOf, createAgent, waitForCall } from '../calls/support.js';

const SECRET = 'whsec_opt_out_before_ended';
const PHONE = '+14155550163';

const relayed = useStackBehindMongoRelay();

/** One of our outbound calls to PHONE as stored before the provider's events: registered. */
async function registeredCall(slug: string, agentId: string): Promise<CallDoc> {
  const db = relayed.stack.services.mongo.db;
  const firm = (await getFirm(db, slug))!;
  const agent = (await db.collection<AgentDoc>(COLLECTIONS.agents).findOne({ _id: agentId }))!;
  const call = newOutboundCall({ firm, agent, toNumber: PHONE }, 'retell');
  await callsOf(relayed.stack).insertOne(call);
  return call;
}

/** Retell's call_ended for our call, whose callee asked not to be called again, signed. */
async function deliverOptOutCallEnded(slug: string, callId: string) {
  const end = Date.now();
  const raw = JSON.stringify({
    event: 'call_ended',
    call: {
      call_id: `p_${rand()}`,
      call_type: 'phone_call',
      direction: 'outbound',
      to_number: PHONE,
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      start_timestamp: end - 30_000,
      end_timestamp: end,
      transcript: "Agent: Hello, this is the firm's intake line.\nUser: Please stop calling me.\n",
      metadata: { call_id: callId },
    },
  });
  const res = await relayed.stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

describe('an opt-out heard in a call, read through other routes', () => {
  it('is listed, and refuses a new call to the number, by the time get-call shows the call ended', async () => {
    const firm = await createFirm(relayed.stack, { voice_webhook_secret: SECRET });
    const agentId = await createAgent(firm.client, firm.slug);
    const call = await registeredCall(firm.slug, agentId);
    const listedPhones = async () => {
      const res = await firm.client.get(`/api/compliance/dnc?firmSlug=${firm.slug}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.entries.map((e: { phone: string }) => e.phone);
    };

    // The job's write of the do-not-call entry (its reason names it) is held at the database.
    const held = relayed.relay.holdRequest('Opt-out said in a call');
    try {
      await deliverOptOutCallEnded(firm.slug, call._id);
      await held.seen;
      // Not listed yet, so not shown ended yet either.
      expect(await listedPhones()).toEqual([]);
      const meanwhile = await firm.client.get(`/api/v2/get-call/${call._id}`);
      expect(meanwhile.status).toBe(200);
      expect(meanwhile.body.status).toBe('registered');
    } finally {
      held.release();
    }
    await waitForCall(firm.client, call._id, (c) => c.status === 'ended');
    // At once, with no wait: the list shows the number and a new call to it is refused.
    expect(await listedPhones()).toEqual([PHONE]);
    const again = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: PHONE,
      agentId,
      firmSlug: firm.slug,
    });
    const details = expectError(again, 409, 'dial_blocked');
    expect(details[0]?.message).toMatch(/^dnc/);
  });
});
