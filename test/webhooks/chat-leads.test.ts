// Leads from ended chats (docs/webhooks.md#chats): end-chat runs the same intake analysis as a call and
// creates the chat's lead through the same lead effect (one per chat: a claim on an id derived
// from the chat) before it answers 200 — a 200 means the lead exists; the chat's other effects
// are a job's (test/webhooks/chat-effects.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjectLeadId } from '../../core/domain/leads/leads.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { expectError } from '../helpers/expect-error.js';
import type { ApiClient } from '../helpers/client.js';
import { createAgent, createChat, say } from '../chat/chat-helpers.js';
import { leadsOf } from './support.js';
import { eventsOf } from '../helpers/events.js';

let stack: Stack;
let firm: { slug: string; client: ApiClient };
let agentId: string;

beforeAll(async () => {
  stack = await startStack(); // no workers: the lead must exist when end-chat answers
  firm = await createFirm(stack);
  agentId = (await createAgent(firm.client, firm.slug)).agent_id;
});
afterAll(async () => stack?.stop());

/** A chat with the built-in intake agent (default questions: name, phone, email, case type, what happened). */
async function intakeChat(answers: string[]): Promise<string> {
  const { chat_id: chatId } = await createChat(firm.client, firm.slug, agentId);
  for (const answer of answers) await say(firm.client, chatId, answer);
  return chatId;
}

const FULL_INTAKE = [
  'Dana Whitfield',
  '(312) 555-0187',
  'Dana.Whitfield@Example.org',
  'I slipped and fell in a grocery store',
  'The floor was wet and there was no sign; I hurt my wrist. My hearing is next week.',
];

const chatLeads = async (chatId: string) => (await leadsOf(stack).find({ chat_id: chatId }).toArray()).length;

describe('an ended chat with contact data', () => {
  it('gives one lead (source chat) by the time end-chat answers; ending it again is 409 and still one lead', async () => {
    const chatId = await intakeChat(FULL_INTAKE);
    const ended = await firm.client.post('/api/v2/end-chat', { chatId });
    expect(ended.body).toEqual({ chat_id: chatId, status: 'ended' });

    const list = await firm.client.get(`/api/leads?firmSlug=${firm.slug}&limit=100`);
    const leads = (list.body.leads as any[]).filter((l) => l.chat_id === chatId);
    expect(leads).toHaveLength(1);
    expect(leads[0]).toMatchObject({
      id: subjectLeadId('chat', chatId),
      source: 'chat',
      chat_id: chatId,
      call_id: null,
      first_name: 'Dana',
      last_name: 'Whitfield',
      phone: '+13125550187',
      email: 'dana.whitfield@example.org',
      case_type: 'Personal Injury',
      urgency: 'high',
    });
    expect(leads[0].summary).toContain('Dana Whitfield');

    expectError(await firm.client.post('/api/v2/end-chat', { chatId }), 409, 'chat_not_active');
    expect(await chatLeads(chatId)).toBe(1);
    // lead.created once (docs/events.md#event-types), recorded before end-chat answered.
    const events = await eventsOf(stack, firm.slug, leads[0].id);
    expect(events.map((e) => [e.type, e.data])).toEqual([['lead.created', leads[0]]]);
  });

  it('ended by 5 concurrent requests: one 200, the rest 409, one lead', async () => {
    const chatId = await intakeChat(FULL_INTAKE.slice(0, 3));
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => firm.client.post('/api/v2/end-chat', { chatId })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(await chatLeads(chatId)).toBe(1);
  });

  it('a lead and effects job lost after the chat ended (a request that died between the writes) are made by the retry', async () => {
    const chatId = await intakeChat(FULL_INTAKE.slice(0, 3));
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    // What a request that died right after the chat's end leaves: no lead, no effect record, no job.
    const job = `chat-effects|${firm.slug}|${chatId}`;
    const queue = stack.services.queues['call-effects'];
    expect(await queue.getJob(job)).toBeDefined();
    await queue.remove(job);
    await leadsOf(stack).deleteOne({ _id: subjectLeadId('chat', chatId) });
    await stack.services.mongo.db
      .collection<{ _id: string }>(COLLECTIONS.chatEffects)
      .deleteOne({ _id: chatId });
    expect(await chatLeads(chatId)).toBe(0);
    expect(await queue.getJob(job)).toBeUndefined();
    expectError(await firm.client.post('/api/v2/end-chat', { chatId }), 409, 'chat_not_active');
    expect(await chatLeads(chatId)).toBe(1);
    expect(await queue.getJob(job)).toBeDefined();
  });
});

describe('an ended chat without contact data', () => {
  it('gives no lead', async () => {
    const chatId = await intakeChat(['Just Looking']);
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const chat = (await firm.client.get(`/api/v2/get-chat/${chatId}`)).body;
    expect(chat.chat_analysis.contact_collected).toBe(false);
    expect(await chatLeads(chatId)).toBe(0);
  });
});
