// The widget's abuse limits over HTTP (docs/widget.md#limits), each reached and answered 429 with
// Retry-After in the error shape: sessions per client address per key per hour, messages per
// widget chat, widget messages per firm per UTC day; and a key token's dynamicVariables ignored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHAT_MESSAGES } from '../../core/domain/chats/chat-limits.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createChat, say } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';
import { clearOfPeriodEdge } from '../helpers/window-edge.js';

const SITE = 'https://firm.example';
const SESSIONS_PER_HOUR = 3;

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    env: {
      WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR: String(SESSIONS_PER_HOUR),
      // A chat's 100 messages sent within a minute, faster than a visitor types: past the per-session
      // and per-address request limits (test/hardening/widget-visitor-limits.test.ts holds those).
      WIDGET_SESSION_RATE_LIMIT_PER_MINUTE: '1000',
      WIDGET_ADDRESS_RATE_LIMIT_PER_MINUTE: '1000',
    },
  });
});
afterAll(async () => stack?.stop());

/** A firm with an agent, a widget key and a visitor's client holding a key token (from SITE). */
async function visitorOf(settings: Record<string, unknown> = {}) {
  const firm = await createFirm(stack, settings);
  const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
  const key = await createWidgetKey(firm.client, firm.slug, { agent_id: agentId });
  const session = await askSession(stack.api, SITE, { key: key.key });
  expect(session.status, JSON.stringify(session.body)).toBe(200);
  const visitor: ApiClient = stack.api.withToken(session.body.token);
  return { firm, agentId, key, visitor };
}

/** Seconds until the end of the current UTC period of `ms` milliseconds. */
const secondsLeft = (ms: number) => Math.ceil((ms - (Date.now() % ms)) / 1000);

describe('widget limits', () => {
  it(`sessions: ${SESSIONS_PER_HOUR} per client address per key per hour, then 429 until the hour ends`, async () => {
    await clearOfPeriodEdge(3_600_000);
    const { firm, key } = await visitorOf(); // the first session
    for (let i = 1; i < SESSIONS_PER_HOUR; i++) {
      expect((await askSession(stack.api, SITE, { key: key.key })).status).toBe(200);
    }
    // The seconds left of the hour before the request: the server counts from a later moment.
    const leftBefore = secondsLeft(3_600_000);
    const refused = await askSession(stack.api, SITE, { key: key.key });
    expectError(refused, 429, 'rate_limited');
    expect(refused.text).not.toContain('iwt_');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(leftBefore);
    // Per key: another key of the firm is not held to this one's count.
    const other = await createWidgetKey(firm.client, firm.slug);
    expect((await askSession(stack.api, SITE, { key: other.key })).status).toBe(200);
  }, 180_000);

  it(`messages per widget chat: ${MAX_CHAT_MESSAGES}, then 429`, async () => {
    const { firm, agentId, visitor } = await visitorOf();
    const { chat_id: chatId } = await createChat(visitor, firm.slug, agentId);
    for (let i = 0; i < MAX_CHAT_MESSAGES; i++) await say(visitor, chatId, `note ${i}`);
    const refused = await visitor.post('/api/v2/chat-completion', { chatId, message: 'one more' });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  }, 120_000);

  it("widget messages per firm per UTC day: the firm's widget_daily_message_cap, then 429 until midnight", async () => {
    await clearOfPeriodEdge(86_400_000);
    const { firm, agentId, visitor, key } = await visitorOf({ widget_daily_message_cap: 3 });
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.widget_daily_message_cap).toBe(3);
    const first = await createChat(visitor, firm.slug, agentId);
    await say(visitor, first.chat_id, 'one');
    await say(visitor, first.chat_id, 'two');
    // Another visitor's chat shares the firm's cap.
    const second = stack.api.withToken((await askSession(stack.api, SITE, { key: key.key })).body.token);
    const other = await createChat(second, firm.slug, agentId);
    await say(second, other.chat_id, 'three');
    const leftBefore = secondsLeft(86_400_000);
    const refused = await second.post('/api/v2/chat-completion', { chatId: other.chat_id, message: 'four' });
    expectError(refused, 429, 'rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(leftBefore);
    // The firm's own tokens are not widget traffic.
    const own = await createChat(firm.client, firm.slug, agentId);
    await say(firm.client, own.chat_id, 'from the office');
    // Only the platform raises the cap (it bounds the platform's chat engine); then the widget talks again.
    const raise = { settings: { widget_daily_message_cap: 10 } };
    const details = expectError(await firm.client.patch(`/api/firms/${firm.slug}`, raise), 403, 'forbidden');
    expect(details.map((d) => d.path)).toEqual(['/settings/widget_daily_message_cap']);
    expectError(
      await firm.client.patch(`/api/firms/${firm.slug}`, { settings: { widget_daily_message_cap: null } }),
      403,
      'forbidden',
    );
    expect((await stack.admin.patch(`/api/firms/${firm.slug}`, raise)).status).toBe(200);
    await say(second, other.chat_id, 'four');
    // Lowering it is the firm's own choice.
    const lowered = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { widget_daily_message_cap: 5 },
    });
    expect(lowered.body.settings.widget_daily_message_cap).toBe(5);
  }, 180_000);

  it("a message the chat refuses (ended: 409; full: 429) reaches no engine and does not count against the firm's daily cap", async () => {
    await clearOfPeriodEdge(86_400_000);
    const cap = MAX_CHAT_MESSAGES + 2;
    const { firm, agentId, visitor } = await visitorOf({ widget_daily_message_cap: cap });
    // A full chat: its 100 messages count; the ones past them are refused and do not.
    const full = await createChat(visitor, firm.slug, agentId);
    for (let i = 0; i < MAX_CHAT_MESSAGES; i++) await say(visitor, full.chat_id, `note ${i}`);
    for (let i = 0; i < 3; i++) {
      const refused = await visitor.post('/api/v2/chat-completion', {
        chatId: full.chat_id,
        message: 'more',
      });
      expectError(refused, 429, 'rate_limited');
      expect(refused.body.error.message).toContain(`limit of ${MAX_CHAT_MESSAGES} messages`);
    }
    // An ended chat: every message refused, none counted.
    expect((await visitor.post('/api/v2/end-chat', { chatId: full.chat_id })).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      expectError(
        await visitor.post('/api/v2/chat-completion', { chatId: full.chat_id, message: 'still there?' }),
        409,
        'chat_not_active',
      );
    }
    // The firm's cap has room for exactly the two messages not yet sent.
    const next = await createChat(visitor, firm.slug, agentId);
    await say(visitor, next.chat_id, 'one');
    await say(visitor, next.chat_id, 'two');
    expectError(
      await visitor.post('/api/v2/chat-completion', { chatId: next.chat_id, message: 'three' }),
      429,
      'rate_limited',
    );
  }, 180_000);

  it('the cap is an integer from 1 to 10,000,000', async () => {
    const firm = await createFirm(stack);
    for (const cap of [0, -1, 1.5, 10_000_001, '5']) {
      expectError(
        await firm.client.patch(`/api/firms/${firm.slug}`, { settings: { widget_daily_message_cap: cap } }),
        400,
        'invalid_request',
      );
    }
  });

  it("a key token's dynamicVariables are ignored", async () => {
    const { firm, agentId, visitor } = await visitorOf();
    const opened = await createChat(visitor, firm.slug, agentId, {
      first_name: 'Mallory',
      phone: '+13125550100',
    });
    expect(opened.message ?? '').not.toContain('Mallory');
    const chat = await visitor.get(`/api/v2/get-chat/${opened.chat_id}`);
    expect(chat.body.dynamic_variables).toEqual({});
  });
});
