// Retell as it really sends (bodies typed with retell-sdk's own types,
// test/fakes/retell-fixtures.ts) against real Redis, FerretDB, workers, SMTP and local Clio and
// Slack servers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign as retellSign } from 'retell-sdk';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import type { FakeSmtp } from '../fakes/smtp-server.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import {
  callWebhook,
  chatWebhook,
  conversationCall,
  dialFailureCall,
  ivrCall,
  longConversationCall,
  ongoingCall,
  voiceWebhook,
  VOICE_EVENTS,
  voicemailCall,
  type RetellCaller,
} from '../fakes/retell-fixtures.js';
import {
  callForProvider,
  callsOf,
  leadsOf,
  postSigned,
  queuesIdle,
  settledCall,
  startPeerStack,
  stopPeerStack,
} from './support.js';

const SECRET = 'whsec_real_shapes_secret';
const RETELL_API_KEY = 'key_retell_account_0123456789abcdef';
/** The line the fixtures' outbound calls are made from (test/fakes/retell-fixtures.ts). */
const FIXTURE_FIRM_LINE = '+14155550100';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  ({ smtp, clio, slack, stack } = await startPeerStack({ RETELL_API_KEY }));
});
afterAll(() => stopPeerStack({ smtp, clio, slack, stack }));

/**
 * A firm with every effect configured; `secret: null` for a firm without its own key. Its number
 * is the fixtures' calling line, so deliveries signed with the platform's key are its own.
 */
async function configuredFirm(secret: string | null = SECRET) {
  const slackUrl = slack.webhookUrl();
  const inbox = `intake-${rand(4)}@firm.test`;
  const firm = await createFirm(stack, {
    ...(secret === null ? {} : { voice_webhook_secret: secret }),
    from_number: FIXTURE_FIRM_LINE,
    notification_emails: [inbox],
    slack_webhook_url: slackUrl,
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
  });
  return { ...firm, slackUrl, inbox };
}
type Firm = Awaited<ReturnType<typeof configuredFirm>>;

const caller = (overrides: Partial<RetellCaller> = {}): RetellCaller => ({
  first_name: 'Maria',
  last_name: 'Lopez',
  phone: `+1415555${String(Math.floor(Math.random() * 9000) + 1000)}`,
  email: `maria.${rand(4)}@example.com`,
  case_type: 'Personal Injury',
  summary: 'Rear-ended at a red light; neck pain.',
  ...overrides,
});

/** Nothing reached a peer for this firm and no lead was made from its calls. */
async function expectNothingSent(firm: Firm, phone: string) {
  expect(await leadsOf(stack).countDocuments({ firm: firm.slug, source: 'call' })).toBe(0);
  expect(smtp.messages.filter((m) => m.to.includes(firm.inbox))).toHaveLength(0);
  expect(slack.messages(firm.slackUrl)).toHaveLength(0);
  expect(clio.contacts.filter((c) => c.phone_numbers.some((p) => p.number === phone))).toHaveLength(0);
}

const SKIPPED = { lead: 'skipped', crm: 'skipped', email: 'skipped', team_chat: 'skipped' };

describe('answered or not', () => {
  it('an outbound call that reaches voicemail creates no lead, CRM record, email or Slack message', async () => {
    const firm = await configuredFirm();
    const call = voicemailCall({ toNumber: '+14155557311' });
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_ended', call));
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', call));
    const callId = (await callForProvider(stack, firm.slug, call.call_id))._id;
    const shown = await settledCall(firm.client, callId);
    await queuesIdle(stack);

    expect(shown).toMatchObject({ status: 'ended', outcome: 'voicemail', effects: SKIPPED, lead_id: null });
    for (const effect of ['lead', 'crm', 'email', 'team_chat']) {
      expect(shown.effect_reasons[effect]).toMatch(/voicemail/);
    }
    expect(shown.caller_data).toBeNull();
    await expectNothingSent(firm, '+14155557311');
  });

  it('an outbound call that reaches a phone menu (ivr_reached) is no conversation: no lead, CRM record, email or Slack message', async () => {
    const firm = await configuredFirm();
    const call = ivrCall({ toNumber: '+14155557312' });
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_ended', call));
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', call));
    const callId = (await callForProvider(stack, firm.slug, call.call_id))._id;
    const shown = await settledCall(firm.client, callId);
    await queuesIdle(stack);

    expect(shown).toMatchObject({ status: 'ended', outcome: 'ivr', effects: SKIPPED, lead_id: null });
    for (const effect of ['lead', 'crm', 'email', 'team_chat']) {
      expect(shown.effect_reasons[effect]).toMatch(/phone menu/);
    }
    expect(shown.caller_data).toBeNull();
    await expectNothingSent(firm, '+14155557312');
  });

  it('a dial failure reported with call_status "ended" and an empty transcript is not_connected and runs no effect', async () => {
    const firm = await configuredFirm();
    const call = dialFailureCall('dial_no_answer', { toNumber: '+14155550377' });
    expect(call.call_status).toBe('ended');
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_ended', call));
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', call));
    const callId = (await callForProvider(stack, firm.slug, call.call_id))._id;
    const shown = await settledCall(firm.client, callId);
    await queuesIdle(stack);

    expect(shown).toMatchObject({ status: 'not_connected', outcome: 'not_connected', effects: SKIPPED });
    expect(shown.effect_reasons.lead).toMatch(/did not connect/);
    await expectNothingSent(firm, '+14155550377');
  });

  it('each dial failure and error_* reason is not_connected whatever call_status says; a conversation is a conversation', async () => {
    const firm = await configuredFirm();
    const reasons = ['dial_busy', 'invalid_destination', 'user_declined', 'error_unknown'] as const;
    const calls = reasons.map((reason) => dialFailureCall(reason));
    for (const call of calls) await postSigned(stack, firm.slug, SECRET, callWebhook('call_ended', call));
    for (const call of calls) {
      const stored = await eventually(async () => {
        const c = await callsOf(stack).findOne({ firm: firm.slug, provider_call_id: call.call_id });
        expect(c?.finished).toBe(true);
        return c!;
      });
      expect(stored.status).toBe('not_connected');
    }
    const talked = conversationCall(caller());
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_ended', talked));
    const callId = (await callForProvider(stack, firm.slug, talked.call_id))._id;
    await eventually(async () => {
      const shown = (await firm.client.get(`/api/v2/get-call/${callId}`)).body;
      expect(shown).toMatchObject({ status: 'ended', outcome: 'conversation' });
    });
  });
});

describe('signatures as Retell makes them', () => {
  it('a firm without its own secret accepts events signed with the platform RETELL_API_KEY', async () => {
    const firm = await configuredFirm(null);
    const talked = conversationCall(caller());
    const raw = JSON.stringify(callWebhook('call_analyzed', talked));
    const signed = await stack.api.request('POST', `/api/v2/${firm.slug}/webhook`, {
      rawBody: raw,
      headers: {
        'Content-Type': 'application/json',
        'x-retell-signature': await retellSign(raw, RETELL_API_KEY),
      },
    });
    expect(signed.status).toBe(200);
    expect(signed.body).toEqual({ received: true });
    const callId = (await callForProvider(stack, firm.slug, talked.call_id))._id;
    const shown = await settledCall(firm.client, callId);
    expect(shown.effects).toEqual({ lead: 'done', crm: 'done', email: 'done', team_chat: 'done' });

    const wrong = await stack.api.request('POST', `/api/v2/${firm.slug}/webhook`, {
      rawBody: raw,
      headers: {
        'Content-Type': 'application/json',
        'x-retell-signature': await retellSign(raw, 'key_someone_else'),
      },
    });
    expect(wrong.status).toBe(401);
  });

  it('a firm with its own secret accepts both its secret and the RETELL_API_KEY', async () => {
    const firm = await configuredFirm();
    const call = dialFailureCall('dial_busy');
    const raw = JSON.stringify(callWebhook('call_ended', call));
    for (const key of [SECRET, RETELL_API_KEY]) {
      const res = await stack.api.request('POST', `/api/v2/${firm.slug}/webhook`, {
        rawBody: raw,
        headers: { 'Content-Type': 'application/json', 'x-retell-signature': await retellSign(raw, key) },
      });
      expect(res.status, key).toBe(200);
    }
  });

  it('an upper-case hex digest is accepted, as retell-sdk verify accepts it', async () => {
    const firm = await configuredFirm();
    const raw = JSON.stringify(callWebhook('call_ended', dialFailureCall('dial_busy')));
    const signature = await retellSign(raw, SECRET);
    const upper = signature.replace(/d=([0-9a-f]+)$/, (_m, hex: string) => `d=${hex.toUpperCase()}`);
    expect(upper).not.toBe(signature);
    const res = await stack.api.request('POST', `/api/v2/${firm.slug}/webhook`, {
      rawBody: raw,
      headers: { 'Content-Type': 'application/json', 'x-retell-signature': upper },
    });
    expect(res.status).toBe(200);
  });
});

describe("Retell's chat events", () => {
  it('chat_started, chat_ended and chat_analyzed (chat, no call) are acknowledged with 200 and ignored', async () => {
    const firm = await configuredFirm();
    for (const event of ['chat_started', 'chat_ended', 'chat_analyzed'] as const) {
      const res = await postSigned(stack, firm.slug, SECRET, chatWebhook(event));
      expect(res.status, event).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    // No job of any kind was made for them.
    const jobs = await stack.services.queues['call-events'].getJobs([
      'waiting',
      'active',
      'delayed',
      'completed',
      'failed',
    ]);
    expect(jobs.filter((job) => String(job.data?.event).startsWith('chat_'))).toEqual([]);
    // A call event still needs its call.
    expect((await postSigned(stack, firm.slug, SECRET, { event: 'call_ended' })).status).toBe(400);
  });
});

describe('every event of the SDK', () => {
  it('transcript_updated and the transfer events (call plus transfer_destination and transfer_option) are acknowledged and change nothing', async () => {
    const firm = await configuredFirm();
    const talking = ongoingCall();
    const ignored = [
      'transcript_updated',
      'transfer_started',
      'transfer_bridged',
      'transfer_cancelled',
      'transfer_ended',
    ] as const;
    for (const event of ignored) {
      expect(Object.keys(VOICE_EVENTS)).toContain(event);
      const res = await postSigned(stack, firm.slug, SECRET, voiceWebhook(event, talking));
      expect(res.status, event).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    const chat = await postSigned(stack, firm.slug, SECRET, chatWebhook('transcript_updated'));
    expect(chat.status).toBe(200);
    await queuesIdle(stack);
    expect(await callsOf(stack).countDocuments({ firm: firm.slug })).toBe(0);
  });
});

describe('no invented names', () => {
  it('a caller who gave no name becomes a Clio Person whose last_name is their phone, with no first_name', async () => {
    const firm = await configuredFirm();
    const nameless = caller({ first_name: null, last_name: null, email: null, phone: '(415) 555-0188' });
    const talked = conversationCall(nameless, { direction: 'inbound', fromNumber: '+14155550188' });
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', talked));
    const callId = (await callForProvider(stack, firm.slug, talked.call_id))._id;
    const shown = await settledCall(firm.client, callId);
    expect(shown.effects.crm).toBe('done');
    const matter = clio.matters.find((m) => m.client_reference === callId)!;
    const person = clio.contacts.find((c) => c.id === matter.client_id)!;
    expect(person).toMatchObject({ type: 'Person', first_name: null, last_name: '+14155550188' });
    expect(JSON.stringify(clio.requests.filter((r) => r.method === 'POST'))).not.toMatch(/Unknown|"Caller"/);
  });

  it('a caller who gave only a first name gets only that name', async () => {
    const firm = await configuredFirm();
    const first = caller({ first_name: 'Priya', last_name: null });
    const talked = conversationCall(first, { direction: 'inbound', fromNumber: first.phone });
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', talked));
    const callId = (await callForProvider(stack, firm.slug, talked.call_id))._id;
    await settledCall(firm.client, callId);
    const matter = clio.matters.find((m) => m.client_reference === callId)!;
    const person = clio.contacts.find((c) => c.id === matter.client_id)!;
    expect(person).toMatchObject({ first_name: 'Priya', last_name: null });
  });
});

describe('re-analysis', () => {
  it('a later call_analyzed with a different analysis updates the extraction and the lead; CRM, email and Slack are not sent again', async () => {
    const firm = await configuredFirm();
    const first = caller({ case_type: 'Personal Injury', summary: 'Rear-ended at a red light.' });
    const talked = conversationCall(first, { direction: 'inbound', fromNumber: first.phone });
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', talked));
    const callId = (await callForProvider(stack, firm.slug, talked.call_id))._id;
    const before = await settledCall(firm.client, callId);
    expect(before.caller_data.case_type).toBe('Personal Injury');

    const revised = conversationCall(
      { ...first, case_type: 'Workers Compensation', summary: 'Injured at work, on the loading dock.' },
      { callId: talked.call_id, direction: 'inbound', fromNumber: first.phone },
    );
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', revised));
    const after = await eventually(async () => {
      const shown = (await firm.client.get(`/api/v2/get-call/${callId}`)).body;
      expect(shown.caller_data.case_type).toBe('Workers Compensation');
      return shown;
    }, 20_000);
    expect(after.caller_data.summary).toMatch(/loading dock/);
    await eventually(async () => {
      const lead = await leadsOf(stack).findOne({ _id: after.lead_id });
      expect(lead).toMatchObject({ case_type: 'Workers Compensation' });
      expect(lead?.summary).toMatch(/loading dock/);
    });
    await queuesIdle(stack);
    expect(await leadsOf(stack).countDocuments({ firm: firm.slug, source: 'call' })).toBe(1);
    expect(smtp.messages.filter((m) => m.to.includes(firm.inbox))).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    expect(clio.matters.filter((m) => m.client_reference === callId)).toHaveLength(1);

    // The same analysis again changes nothing.
    const stored = (await callsOf(stack).findOne({ _id: callId }))!;
    await postSigned(stack, firm.slug, SECRET, callWebhook('call_analyzed', revised));
    await queuesIdle(stack);
    const again = (await callsOf(stack).findOne({ _id: callId }))!;
    expect(again.extraction).toEqual(stored.extraction);
    expect(smtp.messages.filter((m) => m.to.includes(firm.inbox))).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
  });
});

describe('full-size Retell bodies', () => {
  it('a 60-minute call_analyzed as Retell sends it (word-level transcript, latency, call_cost, scrubbed_*) runs the intake once and is stored bounded', async () => {
    const firm = await configuredFirm();
    const talked = longConversationCall(caller(), 60);
    const body = callWebhook('call_analyzed', talked);
    expect(JSON.stringify(body).length).toBeGreaterThan(1_200_000);
    expect(talked.scrubbed_transcript_with_tool_calls?.length).toBeGreaterThan(500);
    const res = await postSigned(stack, firm.slug, SECRET, body);
    expect(res.status).toBe(200);
    const callId = (await callForProvider(stack, firm.slug, talked.call_id))._id;
    const shown = await settledCall(firm.client, callId);
    expect(shown).toMatchObject({
      outcome: 'conversation',
      effects: { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' },
    });
    const stored = (await callsOf(stack).findOne({ _id: callId }))! as unknown as Record<string, unknown>;
    for (const dropped of [
      'transcript_object',
      'transcript_with_tool_calls',
      'scrubbed_transcript_with_tool_calls',
      'latency',
      'call_cost',
    ]) {
      expect(stored[dropped], dropped).toBeUndefined();
    }
    expect(stored.transcript).toBe(talked.transcript);
  });
});
