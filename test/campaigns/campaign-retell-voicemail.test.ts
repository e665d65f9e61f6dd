// A campaign over the Retell provider (a local server speaking Retell's endpoints) whose agent
// has no voicemail detection: the call ends as an ordinary hang-up and only call_analyzed says
// it was a voicemail (call_analysis.in_voicemail). The lead is retried all the same; the
// events are signed with the account's API key, as Retell signs them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { retellEnv, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { callWebhook, conversationCall, ivrCall, voicemailCall } from '../fakes/retell-fixtures.js';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import {
  campaignCalls,
  createAgent,
  createCampaign,
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
  await stack?.stop();
  await fake?.close();
});

const post = (slug: string, body: unknown) => postRetellSigned(stack, fake.apiKey, slug, body);

/** The Retell call the service placed for our call `attempt` of the campaign. */
async function placedCall(campaignId: string, attempt: number) {
  const ours = await eventually(async () => {
    const call = (await campaignCalls(stack, campaignId)).find((c) => c.campaign_attempt === attempt);
    expect(call?.provider_call_id ?? null).not.toBeNull();
    return call!;
  }, 20_000);
  return { ourCallId: ours._id, providerCallId: ours.provider_call_id! };
}

describe('a voicemail told only by call_analyzed', () => {
  it('a campaign call that ended as a hang-up but was analysed as voicemail is retried, with no lead', async () => {
    const firm = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 5 });
    await firm.client.get('/api/v2/list-voices');
    const agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
    const phone = '+12125550433';
    const created = await createCampaign(firm.client, { firmSlug: firm.slug, agentId, leads: [{ phone }] });
    expect(await launch(firm.client, created.id)).toBe(1);

    // Attempt 1: the agent talked to a voicemail box and hung up; the analysis says so.
    const first = await placedCall(created.id, 1);
    // Dialled and not ended: its lead counts as placed already (at the dial, not at its end).
    await waitForCampaign(
      firm.client,
      created.id,
      (c) => c.status === 'running' && c.calls_placed === 1 && c.calls_completed === 0,
      15_000,
    );
    const undetected: PhoneCallResponse = {
      ...voicemailCall({ callId: first.providerCallId, ourCallId: first.ourCallId, toNumber: phone }),
      disconnection_reason: 'agent_hangup',
    };
    const { call_analysis: _analysis, ...ended } = undetected;
    await post(firm.slug, callWebhook('call_ended', ended));
    await post(firm.slug, callWebhook('call_analyzed', undetected));

    // Attempt 2 is placed; this time someone answers.
    const second = await placedCall(created.id, 2);
    const answered = conversationCall(
      {
        first_name: 'Robin',
        last_name: 'Hale',
        phone,
        email: 'robin.hale@example.com',
        case_type: 'Personal Injury',
        summary: 'Slipped on a wet floor at a grocery store.',
      },
      { callId: second.providerCallId, ourCallId: second.ourCallId, toNumber: phone },
    );
    await post(firm.slug, callWebhook('call_ended', { ...answered, call_analysis: undefined }));
    await post(firm.slug, callWebhook('call_analyzed', answered));

    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed', 30_000);
    expect(done).toMatchObject({ calls_placed: 1, calls_completed: 1, calls_failed: 0 });
    const firstView = (await firm.client.get(`/api/v2/get-call/${first.ourCallId}`)).body;
    expect(firstView).toMatchObject({
      outcome: 'voicemail',
      lead_id: null,
      effects: { lead: 'skipped', crm: 'skipped', email: 'skipped', team_chat: 'skipped' },
    });
    const secondView = await eventually(async () => {
      const view = (await firm.client.get(`/api/v2/get-call/${second.ourCallId}`)).body;
      expect(view.effects.lead).toBe('done');
      return view;
    });
    expect(secondView.outcome).toBe('conversation');
    expect(fake.requestsTo('create-phone-call').filter((r) => r.body?.to_number === phone)).toHaveLength(2);
  });
});

describe('a phone menu (ivr_reached)', () => {
  it('a campaign retries a call that reached a phone menu by default, with no lead', async () => {
    const firm = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 5 });
    await firm.client.get('/api/v2/list-voices');
    const agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
    const phone = '+12125550434';
    const created = await createCampaign(firm.client, { firmSlug: firm.slug, agentId, leads: [{ phone }] });
    expect(await launch(firm.client, created.id)).toBe(1);

    // Attempt 1: Retell's IVR detection hung up on a phone menu.
    const first = await placedCall(created.id, 1);
    const menu = ivrCall({ callId: first.providerCallId, ourCallId: first.ourCallId, toNumber: phone });
    await post(firm.slug, callWebhook('call_ended', { ...menu, call_analysis: undefined }));
    await post(firm.slug, callWebhook('call_analyzed', menu));

    // Attempt 2 is placed: a phone menu reached nobody.
    const second = await placedCall(created.id, 2);
    expect(second.providerCallId).not.toBe(first.providerCallId);
    await eventually(async () => {
      const firstView = (await firm.client.get(`/api/v2/get-call/${first.ourCallId}`)).body;
      expect(firstView).toMatchObject({
        outcome: 'ivr',
        lead_id: null,
        effects: { lead: 'skipped', crm: 'skipped', email: 'skipped', team_chat: 'skipped' },
      });
    });
    const campaign = (await firm.client.get(`/api/leads/campaigns/${created.id}`)).body;
    expect(campaign.retry_on).toEqual(['not_connected', 'voicemail', 'ivr']);
    expect(fake.requestsTo('create-phone-call').filter((r) => r.body?.to_number === phone)).toHaveLength(2);
  });
});
