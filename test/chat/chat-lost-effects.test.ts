// A lost chat-effects job: end-chat ran the lead and added the chat's effects job, then a Redis
// failover lost that add (or the process died before it). The firm never got its Clio matter, its
// mail or its Slack message, and get-chat showed those effects `pending` for ever. The lost-calls
// sweep (maintenance, every LOST_CALL_SWEEP_MS) now also adds again the chat-effects job of an
// ended chat whose effects are not all settled while no job of its effects waits or runs. The
// call-effects queue is held here (BullMQ's queue pause) so that a chat's job waits while it is
// taken away, as the failover takes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepLostChats } from '../../core/domain/chats/lost-chats.js';
import { JOBS } from '../../jobs/table.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import type { FakeSmtp } from '../fakes/smtp-server.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import { createAgent, createChat, say } from './chat-helpers.js';
import { analyseChat, type ChatDoc } from '../../core/domain/chats/chats.js';
import { queuesIdle, startPeerStack, stopPeerStack } from '../webhooks/support.js';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  // The worker's own sweep takes only chats ended LOST_END_AFTER_MS (10 minutes) ago: the tests'
  // are younger, so the direct sweeps below are the only ones that see them.
  ({ smtp, clio, slack, stack } = await startPeerStack({ MAIL_FROM: 'Intake <intake@firm.test>' }));
});
afterAll(async () => {
  await stack?.services.queues['call-effects'].resume();
  await stopPeerStack({ smtp, clio, slack, stack });
});

/** A direct sweep of the chats ended up to now, from an hour before the firm's last pass. */
const ENDED_ONLY = { endAfterMs: 0, windowMs: 3_600_000 };
const effectsQueue = () => stack.services.queues['call-effects'];
const ALL_DONE = { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' };

async function configuredFirm() {
  const slackUrl = slack.webhookUrl();
  const inbox = `paralegal-${rand(3)}@firm.test`;
  const firm = await createFirm(stack, {
    notification_emails: [inbox],
    slack_webhook_url: slackUrl,
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
  });
  const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
  return { ...firm, agentId, slackUrl, inbox };
}
type Firm = Awaited<ReturnType<typeof configuredFirm>>;

/** A chat with the intake's answers (a phone and an email among them), not ended. */
async function answeredChat(firm: Firm): Promise<{ chatId: string; email: string }> {
  const email = `dana.${rand(3)}@example.org`;
  const { chat_id: chatId } = await createChat(firm.client, firm.slug, firm.agentId);
  for (const answer of [
    'Dana Whitfield',
    '(312) 555-0187',
    email,
    'I slipped and fell in a grocery store',
    'The floor was wet and there was no sign; I hurt my wrist.',
  ]) {
    await say(firm.client, chatId, answer);
  }
  return { chatId, email };
}

/** A chat with the intake's answers, ended (200) while the effects queue is held. */
async function endedChat(firm: Firm): Promise<{ chatId: string; email: string; jobId: string }> {
  const { chatId, email } = await answeredChat(firm);
  expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
  return { chatId, email, jobId: JOBS.chatEffects.id!({ firm: firm.slug, chatId }) };
}

/** Takes the chat's effects job out of Redis, as a failover that lost its add would. */
async function lose(jobId: string): Promise<void> {
  const job = await effectsQueue().getJob(jobId);
  expect(job, `the chat-effects job ${jobId}`).toBeDefined();
  await job!.remove();
  expect(await effectsQueue().getJobState(jobId)).toBe('unknown');
}

const effectsOf = async (firm: Firm, chatId: string) =>
  (await firm.client.get(`/api/v2/get-chat/${chatId}`)).body.effects as Record<string, string>;
const mailsTo = (inbox: string) => smtp.messages.filter((m) => m.to.includes(inbox));

/**
 * A change of the chat logged as its request logs it (the log's version after `chat`'s, plus
 * `ahead`; its _id the claim), and nothing after it: the request stopped there.
 */
async function logTurn(
  firm: Firm,
  chat: ChatDoc,
  ahead: number,
  turn: { kind: 'exchange' | 'end'; append: ChatDoc['messages']; progress?: unknown; end: unknown },
  at: Date,
): Promise<void> {
  const version = chat.version + ahead;
  await stack.services.mongo.db.collection(COLLECTIONS.chatTurns).insertOne({
    _id: `${chat._id}:${version}` as never,
    chat_id: chat._id,
    firm: firm.slug,
    version,
    ...turn,
    created_at: at,
  });
}

describe('an ended chat whose chat-effects job was lost', () => {
  let firm: Firm;
  let chatId: string;
  let email: string;
  let jobId: string;

  beforeAll(async () => {
    firm = await configuredFirm();
    await effectsQueue().pause();
    ({ chatId, email, jobId } = await endedChat(firm));
  });

  it('is left alone while its job waits: the sweep adds no second one', async () => {
    expect(await effectsQueue().getJobState(jobId)).toBe('waiting');
    const before = await effectsQueue().getJob(jobId);
    const swept = await sweepLostChats(stack.services, ENDED_ONLY);
    expect(swept.rerun).toBe(0);
    const after = await effectsQueue().getJob(jobId);
    expect(after?.timestamp).toBe(before?.timestamp);
    expect(await effectsQueue().getWaitingCount()).toBe(1);
  });

  it('has its job added again by the sweep: one Clio Person and matter, one mail, one Slack message', async () => {
    await lose(jobId);
    expect(await effectsOf(firm, chatId)).toEqual({
      lead: 'done',
      crm: 'pending',
      email: 'pending',
      team_chat: 'pending',
    });
    const swept = await sweepLostChats(stack.services, ENDED_ONLY);
    expect(swept.rerun).toBe(1);
    expect(await effectsQueue().getJobState(jobId)).toBe('waiting');
    // Its job waits again: a second pass adds nothing.
    expect((await sweepLostChats(stack.services, ENDED_ONLY)).rerun).toBe(0);
    await effectsQueue().resume();

    await eventually(async () => expect(await effectsOf(firm, chatId)).toEqual(ALL_DONE), 30_000, 100);
    await queuesIdle(stack);
    const contacts = clio.contacts.filter((c) => c.email_addresses.some((e) => e.address === email));
    expect(contacts).toHaveLength(1);
    expect(clio.matters.filter((m) => m.client_reference === chatId)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
  });

  it('once its effects are all done, is swept again without anything added or sent twice', async () => {
    await queuesIdle(stack);
    await effectsQueue().clean(0, 10_000, 'completed');
    const swept = await sweepLostChats(stack.services, ENDED_ONLY);
    expect(swept.rerun).toBe(0);
    expect(await effectsQueue().getJobState(jobId)).toBe('unknown');
    await queuesIdle(stack);
    expect(await effectsOf(firm, chatId)).toEqual(ALL_DONE);
    expect(clio.matters.filter((m) => m.client_reference === chatId)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
  });
});

describe('a chat whose end was logged and whose writer stopped before writing the chat', () => {
  it('is found by the sweep from the log: caught up, its lead made, its mail, Slack message and Clio matter sent once', async () => {
    const firm = await configuredFirm();
    const { chatId, email } = await answeredChat(firm);
    // end-chat's first write, as it makes it (the log's next version, its _id the claim), and
    // nothing after: the process stopped there, so the client saw no answer and did not retry.
    const db = stack.services.mongo.db;
    const chat = (await db.collection<ChatDoc>(COLLECTIONS.chats).findOne({ _id: chatId }))!;
    const endedAt = new Date();
    const end = { ended_at: endedAt, chat_analysis: analyseChat(chat) };
    await logTurn(firm, chat, 1, { kind: 'end', append: [], end }, endedAt);
    expect((await db.collection<ChatDoc>(COLLECTIONS.chats).findOne({ _id: chatId }))!.status).toBe(
      'ongoing',
    );

    const swept = await sweepLostChats(stack.services, ENDED_ONLY);
    expect(swept.rerun).toBe(1);
    await eventually(async () => expect(await effectsOf(firm, chatId)).toEqual(ALL_DONE), 30_000, 100);
    await queuesIdle(stack);
    const stored = (await firm.client.get(`/api/v2/get-chat/${chatId}`)).body;
    expect(stored.status).toBe('ended');
    expect(clio.contacts.filter((c) => c.email_addresses.some((e) => e.address === email))).toHaveLength(1);
    expect(clio.matters.filter((m) => m.client_reference === chatId)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    // Settled now: the next pass adds nothing.
    await effectsQueue().clean(0, 10_000, 'completed');
    expect((await sweepLostChats(stack.services, ENDED_ONLY)).rerun).toBe(0);
  });
});

describe('an ended chat whose job was lost long before the sweep first looked', () => {
  it('is not taken up: its firm is not told of a chat that ended hours ago', async () => {
    const firm = await configuredFirm();
    await effectsQueue().pause();
    const { chatId, jobId } = await endedChat(firm);
    await lose(jobId);
    await effectsQueue().resume();
    // Ended three hours ago: before the firm's first pass's look-back (an hour) and its window.
    const db = stack.services.mongo.db;
    const threeHoursAgo = new Date(Date.now() - 3 * 3_600_000);
    await db
      .collection<{ _id: string; ended_at: Date }>(COLLECTIONS.chats)
      .updateOne({ _id: chatId }, { $set: { ended_at: threeHoursAgo } });
    const end = await db
      .collection<{ _id: string }>(COLLECTIONS.chatTurns)
      .findOne({ chat_id: chatId, kind: 'end' });
    await db
      .collection<{ _id: string; created_at: Date }>(COLLECTIONS.chatTurns)
      .updateOne({ _id: end!._id }, { $set: { created_at: threeHoursAgo } });
    const swept = await sweepLostChats(stack.services, { ...ENDED_ONLY, windowMs: 1000 });
    expect(swept.rerun).toBe(0);
    expect(await effectsQueue().getJobState(jobId)).toBe('unknown');
    await queuesIdle(stack);
    expect((await effectsOf(firm, chatId)).email).toBe('pending');
    expect(mailsTo(firm.inbox)).toHaveLength(0);
    expect(slack.messages(firm.slackUrl)).toHaveLength(0);
  });
});

describe('a chat whose opt-out and end were logged by writers that stopped before listing it', () => {
  it('has the number put on the do-not-call list by its effects job, which the sweep adds', async () => {
    const firm = await configuredFirm();
    const { chatId } = await answeredChat(firm);
    const db = stack.services.mongo.db;
    const chat = (await db.collection<ChatDoc>(COLLECTIONS.chats).findOne({ _id: chatId }))!;
    // chat-message's write of the person's opt-out and end-chat's first write, each as its
    // request makes it (the log's next version), and nothing after either: neither listed it.
    const at = new Date();
    const append = [
      { role: 'user' as const, content: 'Please stop calling me.', created_at: at },
      { role: 'agent' as const, content: 'Understood.', created_at: at },
    ];
    await logTurn(
      firm,
      chat,
      1,
      { kind: 'exchange', append, progress: chat.intake_progress ?? null, end: null },
      at,
    );
    const analysis = analyseChat({ ...chat, messages: [...chat.messages, ...append] });
    expect(analysis.phone).not.toBeNull();
    await logTurn(
      firm,
      chat,
      2,
      { kind: 'end', append: [], end: { ended_at: at, chat_analysis: analysis } },
      at,
    );
    const listed = async () =>
      (await firm.client.get(`/api/compliance/dnc?firmSlug=${firm.slug}&limit=10`)).body.entries as Array<{
        phone: string;
      }>;
    expect(await listed()).toEqual([]);

    expect((await sweepLostChats(stack.services, ENDED_ONLY)).rerun).toBe(1);
    await eventually(
      async () => expect((await listed()).map((e) => e.phone)).toEqual(['+13125550187']),
      30_000,
      100,
    );
    await queuesIdle(stack);
    const entry = (await listed())[0] as unknown as { source: string; evidence?: { chat_id?: string } };
    expect(entry.source).toBe('chat');
    expect(entry.evidence?.chat_id).toBe(chatId);
  });
});
