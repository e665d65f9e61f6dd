// A page visitor's widget token once sent `dynamicVariables` on create-chat, then
// end-chat with no message, and the variables' phone and email became a lead. Variables are the
// firm's to supply (a widget token's are ignored: docs/widget.md#limits), and a lead is someone who
// wrote.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjectLeadId } from '../../core/domain/leads/leads.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { ApiClient } from '../helpers/client.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createChat, getChat, say } from '../chat/chat-helpers.js';
import { pageConfig } from '../widget/widget-helpers.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  stack = await startStack(); // no workers: end-chat makes the lead before it answers
  const created = await createFirm(stack);
  const agent = await createAgent(created.client, created.slug, { begin_message: 'Hello {{first_name}}.' });
  firm = { ...created, agentId: agent.agent_id };
});
afterAll(async () => stack?.stop());

const FORGED = { first_name: 'Mallory', phone: '+14155550123', email: 'victim@example.com' };

async function widgetClient(): Promise<ApiClient> {
  const page = await firm.client.get(`/api/test-widget?firmSlug=${firm.slug}&agentId=${firm.agentId}`);
  expect(page.status).toBe(200);
  return stack.api.withToken(pageConfig(page.text).token!);
}

const leadOf = (chatId: string) =>
  stack.services.mongo.db
    .collection(COLLECTIONS.leads)
    .findOne({ _id: subjectLeadId('chat', chatId) as never });

describe("a widget visitor's dynamicVariables", () => {
  it('are ignored on create-chat, and ending the chat with no message creates no lead', async () => {
    const visitor = await widgetClient();
    const opened = await createChat(visitor, firm.slug, firm.agentId, FORGED);
    expect(opened.message).not.toContain('Mallory');
    const chatId = opened.chat_id;
    expect((await getChat(visitor, chatId)).dynamic_variables).toEqual({});

    expect((await visitor.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const ended = await getChat(visitor, chatId);
    expect(ended.chat_analysis).toMatchObject({ phone: null, email: null, contact_collected: false });
    expect(await leadOf(chatId)).toBeNull();
  });

  it('a visitor who writes no contact details gives no lead, whatever variables were sent', async () => {
    const visitor = await widgetClient();
    const { chat_id: chatId } = await createChat(visitor, firm.slug, firm.agentId, FORGED);
    await say(visitor, chatId, 'Just looking around');
    expect((await visitor.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    expect(await leadOf(chatId)).toBeNull();
  });

  it("the firm's own variables are kept, yet a chat nobody wrote in creates no lead", async () => {
    const known = { first_name: 'Dana', phone: '+13125550187' };
    const silent = await createChat(firm.client, firm.slug, firm.agentId, known);
    expect(silent.message).toContain('Hello Dana.');
    expect((await getChat(firm.client, silent.chat_id)).dynamic_variables).toEqual(known);
    expect((await firm.client.post('/api/v2/end-chat', { chatId: silent.chat_id })).status).toBe(200);
    expect(await leadOf(silent.chat_id)).toBeNull();

    // Once the person writes, the firm's variables fill in what they did not say (the fallback).
    const spoken = await createChat(firm.client, firm.slug, firm.agentId, known);
    await say(firm.client, spoken.chat_id, 'Dana Whitfield');
    expect((await firm.client.post('/api/v2/end-chat', { chatId: spoken.chat_id })).status).toBe(200);
    expect(await leadOf(spoken.chat_id)).toMatchObject({ phone: '+13125550187' });
  });
});
