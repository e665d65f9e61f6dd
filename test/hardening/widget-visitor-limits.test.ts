// One visitor silenced a firm's widget: one widget token sent 1,200 get-chat requests and every
// other visitor of that firm got 429 for ~54 s, and the firm's daily message cap could be spent
// the same way. Each widget session and each visitor address now has its own limits, counted
// before the firm's shared ones (docs/widget.md#limits). Here at a tenth of the scale: the
// attacker is refused, the firm's other visitors are served. Behind TRUST_PROXY each visitor
// plays its own address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { clearOfPeriodEdge } from '../helpers/window-edge.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey } from '../widget/widget-key-helpers.js';

const SITE = 'https://firm.example';
const FIRM_WIDGET_PER_MINUTE = 40;
const PER_SESSION_PER_MINUTE = 8;
const PER_ADDRESS_PER_MINUTE = 20;
const MESSAGES_PER_SESSION = 4;
const MESSAGES_PER_ADDRESS = 6;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    env: {
      TRUST_PROXY: 'true',
      RATE_LIMIT_PER_MINUTE: String(FIRM_WIDGET_PER_MINUTE),
      WIDGET_SESSION_RATE_LIMIT_PER_MINUTE: String(PER_SESSION_PER_MINUTE),
      WIDGET_ADDRESS_RATE_LIMIT_PER_MINUTE: String(PER_ADDRESS_PER_MINUTE),
      WIDGET_MESSAGES_PER_SESSION: String(MESSAGES_PER_SESSION),
      WIDGET_MESSAGES_PER_ADDRESS_PER_DAY: String(MESSAGES_PER_ADDRESS),
      WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR: '100',
    },
  });
});
afterAll(async () => stack?.stop());

interface Visitor {
  address: string;
  client: ApiClient;
  headers: Record<string, string>;
}

/** A firm with an agent and a widget key; `visit(address)` opens a session from that address. */
async function widgetFirm(settings: Record<string, unknown> = {}) {
  const firm = await createFirm(stack, settings);
  const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
  const key = await createWidgetKey(firm.client, firm.slug, { agent_id: agentId });
  const visit = async (address: string): Promise<Visitor> => {
    const headers = { 'X-Forwarded-For': address, Origin: SITE };
    const session = await askSession(stack.api, SITE, { key: key.key }, headers);
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    return { address, client: stack.api.withToken(session.body.token), headers };
  };
  const openChat = async (visitor: Visitor): Promise<string> => {
    const res = await visitor.client.post(
      '/api/v2/create-chat',
      { firmSlug: firm.slug, agentId },
      visitor.headers,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.chat_id as string;
  };
  return { firm, visit, openChat };
}

describe("one visitor cannot silence a firm's widget", () => {
  it('a get-chat flood from one visitor (one token, then more) is refused; another visitor of the firm is served', async () => {
    const { visit, openChat } = await widgetFirm();
    const attacker = await visit('198.51.100.10');
    const chatId = await openChat(attacker);
    const statuses: number[] = [];
    for (let i = 0; i < 120; i++) {
      statuses.push((await attacker.client.get(`/api/v2/get-chat/${chatId}`, attacker.headers)).status);
    }
    // Fresh tokens from the same address do not buy a fresh allowance.
    for (let t = 0; t < 3; t++) {
      const again = await visit(attacker.address);
      for (let i = 0; i < 20; i++) {
        statuses.push((await again.client.get(`/api/v2/get-chat/${chatId}`, again.headers)).status);
      }
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(statuses.length / 2);
    const refused = await attacker.client.get(`/api/v2/get-chat/${chatId}`, attacker.headers);
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    const other = await visit('192.0.2.20');
    const own = await openChat(other);
    expect((await other.client.get(`/api/v2/get-chat/${own}`, other.headers)).status).toBe(200);
  });

  it("one visitor cannot spend the firm's daily message cap; another visitor still chats", async () => {
    await clearOfPeriodEdge(86_400_000);
    const { visit, openChat } = await widgetFirm({ widget_daily_message_cap: 10 });
    const accepted: number[] = [];
    for (let s = 0; s < 3; s++) {
      const attacker = await visit('198.51.100.30');
      const chatId = await openChat(attacker);
      for (let i = 0; i < MESSAGES_PER_SESSION + 2; i++) {
        const res = await attacker.client.post(
          '/api/v2/chat-completion',
          { chatId, message: `spam ${s}.${i}` },
          attacker.headers,
        );
        if (res.status === 200) accepted.push(s);
        else expectError(res, 429, 'rate_limited');
      }
    }
    // One session's share, then the address's: never the firm's whole cap.
    expect(accepted.filter((s) => s === 0)).toHaveLength(MESSAGES_PER_SESSION);
    expect(accepted).toHaveLength(MESSAGES_PER_ADDRESS);

    const other = await visit('192.0.2.40');
    const chatId = await openChat(other);
    const res = await other.client.post(
      '/api/v2/chat-completion',
      { chatId, message: 'I need a lawyer' },
      other.headers,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});
