// Answered or not in a campaign (docs/campaigns.md#retries-and-counters), end to end with the simulator:
// a number ending 7777 reaches voicemail, 0000 is not answered, others talk. Voicemails and
// no-answers are retried (retry_on, default both) and make no lead, CRM record, mail or Slack
// message; conversations get all four.
import { eventually } from '../helpers/eventually.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import type { FakeSmtp } from '../fakes/smtp-server.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { LeadDoc } from '../../core/domain/leads/leads.js';
import {
  campaignCalls,
  createAgent,
  createCampaign,
  launch,
  simulatorDials,
  waitForCampaign,
} from './support.js';
import { startPeerStack, stopPeerStack } from '../webhooks/support.js';
import { setTimeout as sleep } from 'node:timers/promises';

const SIM_CALL_MS = 300;
const RETRY_DELAY_MS = 500;

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  ({ smtp, clio, slack, stack } = await startPeerStack({
    SIM_CALL_MS: String(SIM_CALL_MS),
    CAMPAIGN_RETRY_DELAY_MS: String(RETRY_DELAY_MS),
  }));
});
afterAll(() => stopPeerStack({ smtp, clio, slack, stack }));

async function configuredFirm() {
  const slackUrl = slack.webhookUrl();
  const inbox = `intake-${rand(4)}@firm.test`;
  const firm = await createFirm(stack, {
    max_concurrent_calls: 4,
    notification_emails: [inbox],
    slack_webhook_url: slackUrl,
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
  });
  return { ...firm, slackUrl, inbox, agentId: await createAgent(firm.client, firm.slug) };
}

const callLeads = (firm: string) =>
  stack.services.mongo.db.collection<LeadDoc>(COLLECTIONS.leads).find({ firm, source: 'call' }).toArray();

describe('a simulated campaign over voicemail, no-answer and ordinary numbers', () => {
  it('retries voicemails and no-answers, which get no lead, CRM record, mail or Slack message; conversations get all four', async () => {
    const firm = await configuredFirm();
    const voicemail = '+12125557777';
    const unanswered = '+12125550000';
    const answered = ['+12125550411', '+12125550412'];
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: [voicemail, unanswered, ...answered].map((phone, i) => ({
        phone,
        first_name: `Lead${i}`,
        last_name: 'Tester',
        email: `lead${i}.${rand(3)}@example.com`,
        case_type: 'auto accident',
      })),
    });
    expect(await launch(firm.client, created.id)).toBe(4);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed', 90_000);
    expect(done).toMatchObject({
      calls_placed: 4,
      calls_completed: 2,
      calls_failed: 2,
      retry_on: ['not_connected', 'voicemail', 'ivr'],
    });

    const calls = await campaignCalls(stack, created.id);
    const attemptsTo = (phone: string) =>
      calls
        .filter((c) => c.to_number === phone)
        .sort((a, b) => a.campaign_attempt! - b.campaign_attempt!)
        .map((c) => [c.campaign_attempt, c.status, c.disconnection_reason]);
    expect(attemptsTo(voicemail)).toEqual([
      [1, 'ended', 'voicemail_reached'],
      [2, 'ended', 'voicemail_reached'],
      [3, 'ended', 'voicemail_reached'],
    ]);
    expect(attemptsTo(unanswered)).toEqual([
      [1, 'not_connected', 'dial_no_answer'],
      [2, 'not_connected', 'dial_no_answer'],
      [3, 'not_connected', 'dial_no_answer'],
    ]);
    for (const phone of answered) expect(attemptsTo(phone)).toEqual([[1, 'ended', 'user_hangup']]);
    expect(await simulatorDials(stack, [voicemail])).toHaveLength(3);

    // Each voicemail is shown as one, its effects skipped with the reason (its analysis may still
    // be recording them when the campaign completes: the campaign waits for the call, not for it).
    const voicemailCall = calls.find((c) => c.to_number === voicemail)!;
    const shown = await eventually(async () => {
      const body = (await firm.client.get(`/api/v2/get-call/${voicemailCall._id}`)).body;
      expect(body).toMatchObject({
        outcome: 'voicemail',
        effects: { lead: 'skipped', crm: 'skipped', email: 'skipped', team_chat: 'skipped' },
        call_analysis: { in_voicemail: true, call_successful: false },
      });
      return body;
    });
    expect(shown.effect_reasons.crm).toMatch(/voicemail/);
    expect(shown.transcript).toMatch(/leave a message/);

    // The conversations, and only they, reached every peer. A conversation settles its lead once
    // its analysis is in, before the analysis job runs its effects: the campaign can complete
    // while they are under way.
    const conversations = calls.filter((c) => answered.includes(c.to_number!));
    for (const call of conversations) {
      await eventually(async () => {
        const view = (await firm.client.get(`/api/v2/get-call/${call._id}`)).body;
        expect(view).toMatchObject({
          outcome: 'conversation',
          effects: { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' },
        });
      });
    }
    const leads = await callLeads(firm.slug);
    expect(leads.map((l) => l.call_id).sort()).toEqual(conversations.map((c) => c._id).sort());
    expect(smtp.messages.filter((m) => m.to.includes(firm.inbox))).toHaveLength(2);
    expect(slack.messages(firm.slackUrl)).toHaveLength(2);
    const referenced = clio.matters.filter((m) => calls.some((c) => c._id === m.client_reference));
    expect(referenced.map((m) => m.client_reference).sort()).toEqual(conversations.map((c) => c._id).sort());
  });

  it('a campaign with retry_on ["not_connected"] does not call a voicemail again', async () => {
    const firm = await configuredFirm();
    const voicemail = '+12125517777';
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      retry_on: ['not_connected'],
      leads: [{ phone: voicemail }],
    });
    expect(await launch(firm.client, created.id)).toBe(1);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed', 60_000);
    expect(done).toMatchObject({ calls_completed: 0, calls_failed: 1, retry_on: ['not_connected'] });
    await sleep(RETRY_DELAY_MS * 2);
    expect(await campaignCalls(stack, created.id)).toHaveLength(1);
  });
});
