// Long hostile chats, the web side: every chat turn replayed the whole history through the contact patterns,
// and nothing capped a chat's length, so a long hostile widget chat made each turn slower than the
// last and held up every other request of the web process (/healthz waited 558 ms behind message
// 80). A turn now reads only its new message (the intake progress is kept with the chat), and a
// chat takes at most 100 visitor messages (docs/widget.md#limits). What a turn reads is shown
// here without a clock: the chat's stored history is changed under it, and the reply still follows
// the kept progress, as it could not if the history were replayed. What a turn costs as the chat
// grows is measured by bench/chat-turn-cost.ts (CPU of turn 80 against turn 1 in the same run).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { intakeReply } from '../../core/domain/intake/intake-agent.js';
import { MAX_CHAT_MESSAGES } from '../../core/domain/chats/chat-limits.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createChat, getChat, say } from '../chat/chat-helpers.js';
import { pageConfig } from '../widget/widget-helpers.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  stack = await startStack({
    // A chat's 100 messages sent within a minute, faster than a visitor types: past the per-session
    // and per-address request limits (test/hardening/widget-visitor-limits.test.ts holds those).
    env: { WIDGET_SESSION_RATE_LIMIT_PER_MINUTE: '1000', WIDGET_ADDRESS_RATE_LIMIT_PER_MINUTE: '1000' },
  });
  const created = await createFirm(stack);
  firm = { ...created, agentId: (await createAgent(created.client, created.slug)).agent_id };
});
afterAll(async () => stack?.stop());

/** A widget token as the test page mints it: what a page visitor holds. */
async function widgetClient(): Promise<ApiClient> {
  const page = await firm.client.get(`/api/test-widget?firmSlug=${firm.slug}&agentId=${firm.agentId}`);
  expect(page.status).toBe(200);
  return stack.api.withToken(pageConfig(page.text).token!);
}

/**
 * 4,000 characters each, the most a message may have: runs built to make the email pattern
 * backtrack, and digit groups, which the phone search parses one by one (the costliest text the
 * analysis reads, bounded per message by its 200 candidates).
 */
const HOSTILE = ['a'.repeat(4000), 'a@'.repeat(2000), '12 '.repeat(1333)];
const POISONED = 'Jane Doe, reach me at jane@example.com or 212 555 0100';
const hostile = (i: number) => HOSTILE[i % HOSTILE.length]!;

describe('a long hostile widget chat', () => {
  it('80 hostile 4,000-character messages are each answered, and a turn reads only its new message, not the history', async () => {
    const visitor = await widgetClient();
    const { chat_id: chatId } = await createChat(visitor, firm.slug, firm.agentId);
    const questions = (await firm.client.get(`/api/v2/get-agent/${firm.agentId}`)).body.intake_questions;
    expect(questions[0].key).toBe('full_name');

    await say(visitor, chatId, 'Jane Doe');
    for (let i = 0; i < 78; i++) await say(visitor, chatId, hostile(i));
    // The history as stored, changed under the chat: its first message now gives a phone and an email too.
    const chats = stack.services.mongo.db.collection(COLLECTIONS.chats);
    const stored = await chats.findOne({ _id: chatId as never });
    const firstUser = stored!.messages.findIndex((m: { role: string }) => m.role === 'user');
    expect(stored!.messages[firstUser].content).toBe('Jane Doe');
    await chats.updateOne(
      { _id: chatId as never },
      { $set: { [`messages.${firstUser}.content`]: POISONED } },
    );

    const sent = ['Jane Doe', ...Array.from({ length: 78 }, (_, i) => hostile(i))];
    const poisoned = [POISONED, ...sent.slice(1)];
    const last = '415 555 0123';
    const kept = intakeReply(questions, sent, last);
    // Replaying the changed history would not ask for the email next: the two replies differ.
    expect(intakeReply(questions, poisoned, last)).not.toBe(kept);
    expect(await say(visitor, chatId, last)).toBe(kept);
    // The hostile messages are kept as sent, none read as a phone or an email.
    const answers = (await chats.findOne({ _id: chatId as never }))?.intake_progress?.answers as Array<{
      key: string;
      value: string;
    }>;
    expect(Object.fromEntries(answers.map((a) => [a.key, a.value]))).toEqual({
      full_name: 'Jane Doe',
      phone: '+14155550123',
    });
    expect((await getChat(visitor, chatId)).messages).toHaveLength(1 + 2 * 80);
  }, 180_000);

  it(`a chat takes ${MAX_CHAT_MESSAGES} visitor messages; the next is 429 rate_limited and not stored`, async () => {
    const visitor = await widgetClient();
    const { chat_id: chatId } = await createChat(visitor, firm.slug, firm.agentId);
    for (let i = 0; i < MAX_CHAT_MESSAGES; i++) await say(visitor, chatId, `note ${i}`);

    const refused = await visitor.post('/api/v2/chat-completion', { chatId, message: 'one more' });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.error.message).toMatch(/new chat/);

    const chat = await getChat(visitor, chatId);
    expect(chat.messages.filter((m: { role: string }) => m.role === 'user')).toHaveLength(MAX_CHAT_MESSAGES);
    // The chat can still be ended, and the firm's own token is held to the same length.
    expect((await visitor.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const own = await createChat(firm.client, firm.slug, firm.agentId);
    for (let i = 0; i < MAX_CHAT_MESSAGES; i++) await say(firm.client, own.chat_id, `note ${i}`);
    expectError(
      await firm.client.post('/api/v2/chat-completion', { chatId: own.chat_id, message: 'one more' }),
      429,
      'rate_limited',
    );
  }, 120_000);
});

describe('chats stored before the progress was kept', () => {
  it('answer as if their history were replayed, and keep the progress from then on', async () => {
    const { chat_id: chatId } = await createChat(firm.client, firm.slug, firm.agentId);
    const sent = ['Jane Doe', 'no phone, sorry', 'reach me at jane@example.com or 415 555 0123'];
    for (const message of sent.slice(0, 2)) await say(firm.client, chatId, message);
    // As a chat written by the previous version looks: no progress kept with it.
    await stack.services.mongo.db
      .collection(COLLECTIONS.chats)
      .updateOne({ _id: chatId as never }, { $unset: { intake_progress: '' } });

    const questions = (await firm.client.get(`/api/v2/get-agent/${firm.agentId}`)).body.intake_questions;
    expect(await say(firm.client, chatId, sent[2]!)).toBe(intakeReply(questions, sent.slice(0, 2), sent[2]!));
    const stored = await stack.services.mongo.db
      .collection(COLLECTIONS.chats)
      .findOne({ _id: chatId as never });
    const kept = stored?.intake_progress?.answers as Array<{ key: string; value: string }>;
    expect(Object.fromEntries(kept.map((a) => [a.key, a.value]))).toEqual({
      full_name: 'Jane Doe',
      phone: '+14155550123',
      email: 'jane@example.com',
    });
    expect(await say(firm.client, chatId, 'Personal injury')).toBe(
      intakeReply(questions, sent, 'Personal injury'),
    );
  });
});
