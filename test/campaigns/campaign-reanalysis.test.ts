// A provider may send call_analyzed again for a call, with an analysis that differs (a re-analysis:
// docs/webhooks.md). A campaign lead settles once: a re-analysis that turns a settled call into a
// voicemail makes no second call to a person the campaign already talked to, and one that turns a
// voicemail into a conversation lets the retry already queued for that lead go without a call.
// The re-analysis comes minutes later (the service clock moved on), as a provider's does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import { clock } from '../../core/platform/clock.js';
import { QUEUE, type QueueName } from '../../jobs/queues.js';
import type { ApiClient } from '../helpers/client.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { retellEnv, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { callWebhook, conversationCall, voicemailCall } from '../fakes/retell-fixtures.js';
import {
  campaignCalls,
  createAgent,
  createCampaign,
  getCampaign,
  launch,
  postRetellSigned,
  waitForCampaign,
} from './support.js';

let fake: RetellFake;
let stack: Stack;

beforeAll(async () => {
  fake = await startRetellFake();
  stack = await startStack({ workers: true, env: { ...retellEnv(fake), CAMPAIGN_RETRY_DELAY_MS: '300' } });
});
afterAll(async () => {
  clock.reset();
  await stack?.stop();
  await fake?.close();
});

const post = (slug: string, body: unknown) => postRetellSigned(stack, fake.apiKey, slug, body);

/** The Retell call the service placed for `phone`'s call `attempt` of the campaign. */
async function placedCall(campaignId: string, phone: string, attempt: number) {
  const ours = await eventually(async () => {
    const call = (await campaignCalls(stack, campaignId)).find(
      (c) => c.to_number === phone && c.campaign_attempt === attempt,
    );
    expect(call?.provider_call_id ?? null).not.toBeNull();
    return call!;
  }, 20_000);
  return { ourCallId: ours._id, providerCallId: ours.provider_call_id! };
}

const callsTo = async (campaignId: string, phone: string) =>
  (await campaignCalls(stack, campaignId)).filter((c) => c.to_number === phone);

/** No job of these queues waits, runs or is delayed: every event posted has been carried through. */
async function settledQueues(names: QueueName[]) {
  await eventually(async () => {
    for (const name of names) {
      const counts = await stack.services.queues[name].getJobCounts(
        'waiting',
        'active',
        'delayed',
        'prioritized',
      );
      expect(counts, name).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
    }
  }, 30_000);
}

const caller = (phone: string) => ({
  first_name: 'Robin',
  last_name: 'Hale',
  phone,
  email: 'robin.hale@example.com',
  case_type: 'Personal Injury',
  summary: 'Slipped on a wet floor at a grocery store.',
});

/** The call ended as a hang-up: only its analysis says whether it was a voicemail. */
function hungUpVoicemail(ids: { callId: string; ourCallId: string; toNumber: string }): PhoneCallResponse {
  return { ...voicemailCall(ids), disconnection_reason: 'agent_hangup' };
}

async function campaignOfTwo(phones: [string, string]) {
  const firm = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 5 });
  await firm.client.get('/api/v2/list-voices');
  const agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
  const created = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId,
    leads: phones.map((phone) => ({ phone })),
  });
  expect(await launch(firm.client, created.id)).toBe(2);
  return { firm, id: created.id };
}

/**
 * The campaign's other lead's call, held open so far, ends as a conversation: the campaign
 * completes, both leads called once, and `phone` was dialled at Retell once.
 */
async function endOpenCallAndComplete(
  firm: { slug: string; client: ApiClient },
  id: string,
  open: string,
  held: { ourCallId: string; providerCallId: string },
  phone: string,
) {
  const other = conversationCall(caller(open), {
    callId: held.providerCallId,
    ourCallId: held.ourCallId,
    toNumber: open,
  });
  await post(firm.slug, callWebhook('call_ended', { ...other, call_analysis: undefined }));
  await post(firm.slug, callWebhook('call_analyzed', other));
  const done = await waitForCampaign(firm.client, id, (c) => c.status === 'completed');
  expect(done).toMatchObject({ calls_placed: 2, calls_completed: 2, calls_failed: 0 });
  expect(fake.requestsTo('create-phone-call').filter((r) => r.body?.to_number === phone)).toHaveLength(1);
}

describe('a campaign call analysed again', () => {
  it('as a voicemail after its conversation settled the lead: no second call to that lead', async () => {
    // The second lead's call stays open: the campaign is still running when the re-analysis comes.
    const [phone, open] = ['+12125550471', '+12125550472'];
    const { firm, id } = await campaignOfTwo([phone, open]);
    const first = await placedCall(id, phone, 1);
    const held = await placedCall(id, open, 1);
    const ids = { callId: first.providerCallId, ourCallId: first.ourCallId, toNumber: phone };

    const answered = conversationCall(caller(phone), ids);
    await post(firm.slug, callWebhook('call_ended', { ...answered, call_analysis: undefined }));
    await post(firm.slug, callWebhook('call_analyzed', answered));
    await waitForCampaign(firm.client, id, (c) => c.calls_completed === 1);

    clock.shift(5 * 60_000);
    await post(firm.slug, callWebhook('call_analyzed', { ...answered, ...hungUpVoicemail(ids) }));
    await eventually(async () =>
      expect((await firm.client.get(`/api/v2/get-call/${first.ourCallId}`)).body.outcome).toBe('voicemail'),
    );
    await settledQueues([QUEUE.callEvents, QUEUE.campaigns]);
    expect((await callsTo(id, phone)).map((c) => c.campaign_attempt)).toEqual([1]);
    expect(await getCampaign(firm.client, id)).toMatchObject({ status: 'running', calls_completed: 1 });

    // The open call ends: the campaign completes, each lead called once.
    await endOpenCallAndComplete(firm, id, open, held, phone);
  });

  it('as a conversation after its voicemail queued a retry: the retry makes no call', async () => {
    const [phone, open] = ['+12125550473', '+12125550474'];
    const { firm, id } = await campaignOfTwo([phone, open]);
    const first = await placedCall(id, phone, 1);
    const held = await placedCall(id, open, 1);
    const ids = { callId: first.providerCallId, ourCallId: first.ourCallId, toNumber: phone };

    // Paused, so that the retry the voicemail queues waits (parked) until the resume.
    expect((await firm.client.post(`/api/leads/campaigns/${id}/pause`)).status).toBe(200);
    const voicemail = hungUpVoicemail(ids);
    await post(firm.slug, callWebhook('call_ended', { ...voicemail, call_analysis: undefined }));
    await post(firm.slug, callWebhook('call_analyzed', voicemail));
    await eventually(async () =>
      expect((await firm.client.get(`/api/v2/get-call/${first.ourCallId}`)).body.outcome).toBe('voicemail'),
    );
    await settledQueues([QUEUE.callEvents]);

    // Analysed again: it was a conversation after all; the lead is settled.
    clock.shift(5 * 60_000);
    const answered: PhoneCallResponse = {
      ...conversationCall(caller(phone), ids),
      disconnection_reason: 'agent_hangup',
    };
    await post(firm.slug, callWebhook('call_analyzed', answered));
    await waitForCampaign(firm.client, id, (c) => c.calls_completed === 1);

    expect((await firm.client.post(`/api/leads/campaigns/${id}/resume`)).status).toBe(200);
    await settledQueues([QUEUE.callEvents, QUEUE.campaigns]);
    expect((await callsTo(id, phone)).map((c) => c.campaign_attempt)).toEqual([1]);

    await endOpenCallAndComplete(firm, id, open, held, phone);
  });
});
