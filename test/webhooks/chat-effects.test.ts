// An ended chat's effects (docs/webhooks.md#chats): end-chat runs the pipeline of an analysed call
// — one lead, the Clio Person and matter, the email to notification_emails, the Slack message —
// through the same effect definitions and retry path, against real peers (an SMTP server, local
// HTTP servers speaking Clio's and Slack's protocols), real Redis, FerretDB and workers. Each
// effect happens once per chat however often end-chat is repeated, and a failing one is retried
// alone. get-chat shows the four effects as get-call does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { subjectLeadId } from '../../core/domain/leads/leads.js';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { documentedResponses } from '../helpers/documented-response.js';
import type { ApiClient } from '../helpers/client.js';
import { decodeHeader, type FakeSmtp } from '../fakes/smtp-server.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import { createAgent, createChat, say } from '../chat/chat-helpers.js';
import { leadsOf, queuesIdle, startPeerStack, stopPeerStack } from './support.js';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  ({ smtp, clio, slack, stack } = await startPeerStack({
    MAIL_FROM: 'Intake <intake@firm.test>',
    PUBLIC_BASE_URL: 'https://intake.example.com',
    // A failed effect is retried after 0.3 s, 0.6 s, ... (2 s, 4 s, ... by default).
    CALL_EFFECT_RETRY_MS: '300',
  }));
});
afterAll(() => stopPeerStack({ smtp, clio, slack, stack }));

interface Firm {
  slug: string;
  client: ApiClient;
  agentId: string;
  slackUrl: string;
  inbox: string;
}

/** A firm with every effect configured (its own Slack webhook URL and mailbox), or with none. */
async function firmWith(configured: boolean): Promise<Firm> {
  const slackUrl = slack.webhookUrl();
  const inbox = `paralegal-${rand(3)}@firm.test`;
  const firm = await createFirm(
    stack,
    configured
      ? {
          notification_emails: [inbox],
          slack_webhook_url: slackUrl,
          crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
          timezone: 'America/Chicago',
        }
      : {},
  );
  const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
  return { ...firm, agentId, slackUrl, inbox };
}

/** The built-in intake agent's questions answered (name, phone, email, case type, what happened), with an email of its own. */
const fullIntake = () => {
  const email = `dana.${rand(3)}@example.org`;
  return {
    email,
    answers: [
      'Dana Whitfield',
      '(312) 555-0187',
      email,
      'I slipped and fell in a grocery store',
      'The floor was wet and there was no sign; I hurt my wrist. My hearing is next week.',
    ],
  };
};

async function chatWith(firm: Firm, answers: string[]): Promise<string> {
  const { chat_id: chatId } = await createChat(firm.client, firm.slug, firm.agentId);
  for (const answer of answers) await say(firm.client, chatId, answer);
  return chatId;
}

/** Polls get-chat until every effect has left `pending`; returns the chat as the API shows it. */
function settledChat(firm: Firm, chatId: string) {
  return eventually(
    async () => {
      const res = await firm.client.get(`/api/v2/get-chat/${chatId}`);
      expect(res.status).toBe(200);
      expect(res.body.effects, JSON.stringify(res.body.effects)).toBeDefined();
      expect(Object.values(res.body.effects), JSON.stringify(res.body.effects)).not.toContain('pending');
      return res.body;
    },
    30_000,
    100,
  );
}

/** The chat's effect records as stored (chat_effects, `_id` = the chat's). */
const recordsOf = (chatId: string) =>
  stack.services.mongo.db
    .collection<{ _id: string; effects?: Record<string, any>; crm_sync?: Record<string, any> }>(
      COLLECTIONS.chatEffects,
    )
    .findOne({ _id: chatId });

const mailsTo = (inbox: string) => smtp.messages.filter((m) => m.to.includes(inbox));
const contactsWithEmail = (email: string) =>
  clio.contacts.filter((c) => c.email_addresses.some((e) => e.address === email));
const contactWrites = (email: string) =>
  clio.writes('/api/v4/contacts.json').filter((r) => r.body.data.email_addresses?.[0]?.address === email);
const ALL_DONE = { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' };

describe('a chat with contact data, in a firm with Clio, notification_emails and Slack', () => {
  let firm: Firm;
  let chatId: string;
  let email: string;

  beforeAll(async () => {
    firm = await firmWith(true);
    const intake = fullIntake();
    email = intake.email;
    chatId = await chatWith(firm, intake.answers);
    // Ended by 5 requests at once: one 200, the rest 409, each of which makes sure of the job.
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => firm.client.post('/api/v2/end-chat', { chatId })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
  });

  it('get-chat shows the four effects done, in the shape its document declares', async () => {
    const chat = await settledChat(firm, chatId);
    expect(chat.effects).toEqual(ALL_DONE);
    const expectDocumented = await documentedResponses(firm.client, { closed: true });
    expectDocumented(
      await firm.client.get(`/api/v2/get-chat/${chatId}`),
      'GET',
      '/api/v2/get-chat/{chat_id}',
    );
  });

  it('gives one lead, one Clio Person and one matter, one mail and one Slack message', async () => {
    await settledChat(firm, chatId);
    expect(await leadsOf(stack).countDocuments({ chat_id: chatId })).toBe(1);
    expect(contactsWithEmail(email)).toHaveLength(1);
    expect(contactWrites(email)).toHaveLength(1);
    const contact = contactsWithEmail(email)[0]!;
    const matters = clio.matters.filter((m) => m.client_id === contact.id);
    expect(matters).toHaveLength(1);
    expect(matters[0]).toMatchObject({ status: 'Pending', client_reference: chatId });
    expect(matters[0]!.description).toContain('(web chat)');
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    const records = await recordsOf(chatId);
    expect(records?.effects?.lead).toMatchObject({
      state: 'done',
      result: { lead_id: subjectLeadId('chat', chatId) },
    });
    expect(records?.effects?.crm?.result).toMatchObject({
      contact_id: contact.id,
      matter_id: matters[0]!.id,
    });
    // The records live beside the chat, never on it.
    const onChat = await stack.services.mongo.db
      .collection(COLLECTIONS.chats)
      .findOne({ _id: chatId as never }, { projection: { effects: 1, crm_sync: 1 } });
    expect(onChat).toEqual({ _id: chatId });
  });

  it('mails and posts to Slack that it was a web chat, with the agent, the caller data, the summary and a link to the chat', async () => {
    await settledChat(firm, chatId);
    const mail = mailsTo(firm.inbox)[0]!;
    expect(decodeHeader(mail.header('subject')!)).toBe(
      '[High priority] New intake web chat: Dana Whitfield — Personal Injury',
    );
    expect(mail.header('message-id')).toBe(`<chat-notification.${chatId}@intake.example.com>`);
    const raw = mail.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    for (const text of [
      'A new intake web chat for',
      'Intake Ava',
      'Web chat',
      '+13125550187',
      email,
      'Personal Injury',
      `Chat record: https://intake.example.com/api/v2/get-chat/${chatId}`,
    ]) {
      expect(raw).toContain(text);
    }
    expect(raw).not.toContain('intake call');

    const message = slack.messages(firm.slackUrl)[0]!.body;
    expect(message.text).toContain('New intake web chat: Dana Whitfield');
    expect(message.text).toContain('Intake Ava');
    expect(message.text).not.toContain('intake call');
    const blocks = JSON.stringify(message.blocks);
    expect(blocks).toContain(`<https://intake.example.com/api/v2/get-chat/${chatId}|Open the chat record>`);
    expect(blocks).toContain('+13125550187');
  });

  it('end-chat repeated later (409), after BullMQ has forgotten the jobs, repeats nothing', async () => {
    await settledChat(firm, chatId);
    await queuesIdle(stack);
    await stack.services.queues['call-effects'].clean(0, 10_000, 'completed');
    for (let i = 0; i < 3; i++) {
      expectError(await firm.client.post('/api/v2/end-chat', { chatId }), 409, 'chat_not_active');
    }
    // The repeat added the chat's job again, which ran and found every effect done.
    await eventually(async () => {
      const ran = (await stack.services.queues['call-effects'].getJobs(['completed'])).filter(
        (j) => j.name === 'chat-effects' && j.data.chatId === chatId,
      );
      expect(ran.length).toBeGreaterThanOrEqual(1);
    });
    await queuesIdle(stack);
    expect((await firm.client.get(`/api/v2/get-chat/${chatId}`)).body.effects).toEqual(ALL_DONE);
    expect(await leadsOf(stack).countDocuments({ chat_id: chatId })).toBe(1);
    expect(contactWrites(email)).toHaveLength(1);
    expect(clio.matters.filter((m) => m.client_reference === chatId)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    const records = await recordsOf(chatId);
    for (const name of ['crm', 'email', 'team_chat']) {
      expect(records?.effects?.[name], name).toMatchObject({ state: 'done', attempts: 1 });
    }
  });
});

describe('a failing effect is retried alone', () => {
  it('Slack answering 500 twice then 200: one Slack message in the end, the email and the Clio contact not repeated', async () => {
    const firm = await firmWith(true);
    slack.failNext.push({ status: 500, url: firm.slackUrl }, { status: 500, url: firm.slackUrl });
    const { email, answers } = fullIntake();
    const chatId = await chatWith(firm, answers);
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);

    const chat = await settledChat(firm, chatId);
    expect(chat.effects).toEqual(ALL_DONE);
    const attempts = slack.attempts
      .filter((a) => a.path === new URL(firm.slackUrl).pathname)
      .map((a) => a.status);
    expect(attempts).toEqual([500, 500, 200]);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(contactWrites(email)).toHaveLength(1);
    expect(clio.matters.filter((m) => m.client_reference === chatId)).toHaveLength(1);
    const records = await recordsOf(chatId);
    expect(records?.effects?.team_chat).toMatchObject({ state: 'done', attempts: 3 });
    expect(records?.effects?.email).toMatchObject({ state: 'done', attempts: 1 });
    expect(records?.effects?.crm).toMatchObject({ state: 'done', attempts: 1 });
    // Handed by the chat's job to a job of its own, first tried CALL_EFFECT_RETRY_MS later.
    const queue = stack.services.queues['call-effects'];
    const retried = await eventually(async () => {
      const job = await queue.getJob(`chat-effect|${firm.slug}|${chatId}|team_chat`);
      expect(await job?.getState()).toBe('completed');
      return job!;
    });
    expect(retried.opts.delay).toBe(300);
    for (const effect of ['lead', 'crm', 'email']) {
      expect(await queue.getJob(`chat-effect|${firm.slug}|${chatId}|${effect}`), effect).toBeUndefined();
    }
  });
});

describe('what is skipped', () => {
  it('a firm with nothing configured: the lead is done, crm, email and team_chat skipped with their reasons', async () => {
    const firm = await firmWith(false);
    const chatId = await chatWith(firm, fullIntake().answers);
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const chat = await settledChat(firm, chatId);
    expect(chat.effects).toEqual({ lead: 'done', crm: 'skipped', email: 'skipped', team_chat: 'skipped' });
    const records = await recordsOf(chatId);
    expect(records?.effects?.crm?.result?.reason).toMatch(/settings\.crm/);
    expect(records?.effects?.email?.result?.reason).toMatch(/notification_emails/);
    expect(records?.effects?.team_chat?.result?.reason).toMatch(/slack_webhook_url/);
  });

  it('a chat in which the visitor wrote nothing: every effect skipped (no conversation), no lead, nothing sent', async () => {
    const firm = await firmWith(true);
    const { chat_id: chatId } = await createChat(firm.client, firm.slug, firm.agentId, {
      email: `nobody.${rand(3)}@example.org`,
    });
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const skipped = { lead: 'skipped', crm: 'skipped', email: 'skipped', team_chat: 'skipped' };
    // Skipped before any record is written, and once they are.
    expect((await firm.client.get(`/api/v2/get-chat/${chatId}`)).body.effects).toEqual(skipped);
    await eventually(async () => {
      const records = await recordsOf(chatId);
      for (const name of ['lead', 'crm', 'email', 'team_chat']) {
        expect(records?.effects?.[name], name).toMatchObject({
          state: 'skipped',
          result: { reason: expect.stringMatching(/no conversation took place/) },
        });
      }
    });
    await queuesIdle(stack);
    expect((await firm.client.get(`/api/v2/get-chat/${chatId}`)).body.effects).toEqual(skipped);
    expect(await leadsOf(stack).countDocuments({ chat_id: chatId })).toBe(0);
    expect(mailsTo(firm.inbox)).toHaveLength(0);
    expect(slack.messages(firm.slackUrl)).toHaveLength(0);
  });

  it('a chat without contact data: lead and crm skipped, the firm still told by email and Slack', async () => {
    const firm = await firmWith(true);
    const chatId = await chatWith(firm, ['Just Looking']);
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const chat = await settledChat(firm, chatId);
    expect(chat.chat_analysis.contact_collected).toBe(false);
    expect(chat.effects).toEqual({ lead: 'skipped', crm: 'skipped', email: 'done', team_chat: 'done' });
    const records = await recordsOf(chatId);
    expect(records?.effects?.lead?.result?.reason).toMatch(/No phone number or email address/);
    expect(records?.effects?.crm?.result?.reason).toMatch(/No phone number or email address/);
    expect(await leadsOf(stack).countDocuments({ chat_id: chatId })).toBe(0);
    expect(clio.matters.filter((m) => m.client_reference === chatId)).toHaveLength(0);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
  });
});
