// Long hostile chats, the web side: every chat turn replayed the whole history through the contact patterns,
// and nothing capped a chat's length, so a long hostile widget chat made each turn slower than the
// last and held up every other request of the web process (/healthz waited 558 ms behind message
// 80). A turn now reads only its new message (the intake progress is kept with the chat), and a
// chat takes at most 100 visitor messages (docs/widget.md#limits). What a turn costs is measured
// as CPU of the web process (in this process: its main thread), so a loaded machine does not
// count: turn 80 may cost at most 4 times what turn 1 did, where replaying the history made it
// tens of times as much.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { intakeReply } from '../../core/domain/intake/intake-agent.js';
import { MAX_CHAT_MESSAGES } from '../../core/domain/chats/chat-limits.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createChat, getChat, say } from '../chat/chat-helpers.js';
import { pageConfig } from '../widget/widget-helpers.js';
import { processCpuMs } from '../helpers/growth.js';

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
const hostile = (i: number) => HOSTILE[i % HOSTILE.length]!;

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

describe('a long hostile widget chat', () => {
  it('80 hostile 4,000-character messages: turn 80 costs the web process at most 4 times the CPU turn 1 did', async () => {
    const visitor = await widgetClient();
    const { chat_id: chatId } = await createChat(visitor, firm.slug, firm.agentId);

    // This process runs the web process's code: its main thread's CPU during a turn is the
    // turn's (the test's own request is the same small cost every turn).
    const cpu: number[] = [];
    const wall: number[] = [];
    for (let i = 0; i < 80; i++) {
      const cpuBefore = processCpuMs(process.pid);
      const started = performance.now();
      await say(visitor, chatId, hostile(i));
      wall.push(performance.now() - started);
      cpu.push(processCpuMs(process.pid) - cpuBefore);
    }
    // Three turns of each kind of message at each end.
    const first = median(cpu.slice(0, 6));
    const last = median(cpu.slice(-6));
    const figures = {
      turn_first6_median_cpu_ms: Number(first.toFixed(1)),
      turn_last6_median_cpu_ms: Number(last.toFixed(1)),
      turn_first6_median_ms: Math.round(median(wall.slice(0, 6))),
      turn_last6_median_ms: Math.round(median(wall.slice(-6))),
      turn_max_ms: Math.round(Math.max(...wall)),
    };
    console.log('long hostile chat figures', JSON.stringify(figures));
    // Each turn still runs the contact patterns once over its own 4,000 characters, and the chat
    // document it rewrites grows; neither may add up to this. Replaying the history did.
    expect(last, JSON.stringify(figures)).toBeLessThanOrEqual(4 * first);
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
