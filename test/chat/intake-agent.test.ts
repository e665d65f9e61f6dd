// The built-in intake agent over HTTP (real Redis and FerretDB): a whole intake from greeting to
// summary, answers given early, invalid phone/email answers re-asked, and the analysis end-chat
// stores.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { INTAKE_COMPLETE_REPLY } from '../../core/domain/intake/intake-agent.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import type { ApiClient } from '../helpers/client.js';
import { createAgent, createChat, getChat, say } from './chat-helpers.js';

const [NAME_Q, PHONE_Q, EMAIL_Q, CASE_Q, WHAT_Q] = DEFAULT_INTAKE_QUESTIONS.map((q) => q.question) as [
  string,
  string,
  string,
  string,
  string,
];
const PHONE_HINT = "Sorry, I couldn't find a valid phone number in that.";
const EMAIL_HINT = "Sorry, that doesn't look like a complete email address.";

let stack: Stack;
let client: ApiClient;
let slug: string;
let agentId: string;

beforeAll(async () => {
  stack = await startStack();
  const firm = await createFirm(stack);
  client = firm.client;
  slug = firm.slug;
  agentId = (await createAgent(client, slug, { begin_message: 'Welcome to Doe & Partners.' })).agent_id;
});
afterAll(async () => stack?.stop());

describe('the built-in intake agent', () => {
  it('runs the intake from greeting to summary, stores every message, and analyses it at the end', async () => {
    const created = await createChat(client, slug, agentId);
    expect(created).toEqual({
      chat_id: expect.stringMatching(/^chat_/),
      agent_id: agentId,
      status: 'ongoing',
      message: `Welcome to Doe & Partners. ${NAME_Q}`,
    });
    const chatId = created.chat_id;

    // Each answer is acknowledged and the next question follows, in the agent's order.
    const exchange: Array<[string, string]> = [
      ['jane doe', `Thank you, Jane. ${PHONE_Q}`],
      ['(415) 555-0123', `Thank you. ${EMAIL_Q}`],
      ['Jane.Doe@Example.com', `Thank you. ${CASE_Q}`],
      ['A car accident', `Thank you. ${WHAT_Q}`],
    ];
    for (const [message, reply] of exchange) expect(await say(client, chatId, message)).toBe(reply);

    const summary = await say(client, chatId, 'I was rear-ended on the highway last week.');
    expect(summary).toBe(
      [
        'Thank you, Jane. Here is a summary of what I collected:',
        '- Full name: Jane Doe',
        '- Phone: +14155550123',
        '- Email: jane.doe@example.com',
        '- Case type: A car accident',
        '- Description: I was rear-ended on the highway last week.',
        'A member of our team will review your information and contact you soon.',
      ].join('\n'),
    );
    // After the summary the agent only says, politely, that the intake is complete.
    expect(await say(client, chatId, 'Thanks! Anything else?')).toBe(INTAKE_COMPLETE_REPLY);

    const chat = await getChat(client, chatId);
    expect(chat).toMatchObject({
      chat_id: chatId,
      agent_id: agentId,
      firm: slug,
      status: 'ongoing',
      dynamic_variables: {},
      ended_at: null,
    });
    expect(chat).not.toHaveProperty('chat_analysis');
    expect(chat.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['agent', created.message],
      ...exchange.flatMap(([message, reply]) => [
        ['user', message],
        ['agent', reply],
      ]),
      ['user', 'I was rear-ended on the highway last week.'],
      ['agent', summary],
      ['user', 'Thanks! Anything else?'],
      ['agent', INTAKE_COMPLETE_REPLY],
    ]);
    const times = chat.messages.map((m: any) => Date.parse(m.created_at));
    expect(times.every((t: number) => Number.isFinite(t))).toBe(true);
    expect([...times].sort((a, b) => a - b)).toEqual(times);

    const ended = await client.post('/api/v2/end-chat', { chatId });
    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ chat_id: chatId, status: 'ended' });

    const after = await getChat(client, chatId);
    expect(after.status).toBe('ended');
    expect(Date.parse(after.ended_at)).toBeGreaterThanOrEqual(Date.parse(after.created_at));
    expect(after.messages).toEqual(chat.messages);
    expect(after.chat_analysis).toEqual({
      name: 'Jane Doe',
      first_name: 'Jane',
      last_name: 'Doe',
      phone: '+14155550123',
      email: 'jane.doe@example.com',
      case_type: 'Personal Injury',
      summary: expect.stringContaining('Jane Doe contacted the firm'),
      urgency: 'normal',
      answers: {
        full_name: 'Jane Doe',
        phone: '+14155550123',
        email: 'jane.doe@example.com',
        case_type: 'A car accident',
        description: 'I was rear-ended on the highway last week.',
      },
      contact_collected: true,
    });
    expect(after.chat_analysis.summary).toContain('rear-ended on the highway');
  });

  it('takes contact details given before their question and does not ask for them again', async () => {
    const { chat_id: chatId } = await createChat(client, slug, agentId);
    expect(
      await say(client, chatId, "Hi, I'm Maria Lopez. Email maria@lopez.example or call 212-555-0142."),
    ).toBe(`Thank you, Maria. I've noted your phone number and email address. ${CASE_Q}`);
    expect(await say(client, chatId, 'My husband and I are getting a divorce')).toBe(`Thank you. ${WHAT_Q}`);
    const summary = await say(client, chatId, 'We separated in May and have a court date tomorrow.');
    expect(summary).toContain('- Phone: +12125550142');
    expect(summary).toContain('- Email: maria@lopez.example');

    const asked = (await getChat(client, chatId)).messages
      .filter((m: any) => m.role === 'agent')
      .map((m: any) => m.content)
      .join('\n');
    expect(asked).not.toContain(PHONE_Q);
    expect(asked).not.toContain(EMAIL_Q);

    // Something volunteered while another question is pending is noted, and that question repeated.
    const second = (await createChat(client, slug, agentId)).chat_id;
    expect(await say(client, second, 'you can write to me at sam@example.com')).toBe(
      `Thank you. I've noted your email address. ${NAME_Q}`,
    );
    expect(await say(client, second, 'Sam Reed')).toBe(`Thank you, Sam. ${PHONE_Q}`);
    expect(await say(client, second, '4155550188')).toBe(`Thank you. ${CASE_Q}`);

    expect((await client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const analysis = (await getChat(client, chatId)).chat_analysis;
    expect(analysis).toMatchObject({
      name: 'Maria Lopez',
      phone: '+12125550142',
      email: 'maria@lopez.example',
      case_type: 'Family Law',
      urgency: 'urgent',
      answers: { full_name: 'Maria Lopez', phone: '+12125550142', email: 'maria@lopez.example' },
      contact_collected: true,
    });
  });

  it('re-asks with a hint when a phone number or an email address is not valid', async () => {
    const { chat_id: chatId } = await createChat(client, slug, agentId);
    expect(await say(client, chatId, 'Jane Doe')).toBe(`Thank you, Jane. ${PHONE_Q}`);
    for (const invalid of ['555-12', 'call me maybe', '(555) 123-4567']) {
      const reply = await say(client, chatId, invalid);
      expect(reply.startsWith(PHONE_HINT)).toBe(true);
      expect(reply.endsWith(PHONE_Q)).toBe(true);
    }
    expect(await say(client, chatId, 'sorry: +1 415 555 0123')).toBe(`Thank you. ${EMAIL_Q}`);
    for (const invalid of ['jane at example', 'jane@example', 'none']) {
      const reply = await say(client, chatId, invalid);
      expect(reply.startsWith(EMAIL_HINT)).toBe(true);
      expect(reply.endsWith(EMAIL_Q)).toBe(true);
    }
    expect(await say(client, chatId, 'jane@example.com')).toBe(`Thank you. ${CASE_Q}`);

    const chat = await getChat(client, chatId);
    expect(chat.messages).toHaveLength(1 + 2 * 9);
    expect((await client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    expect((await getChat(client, chatId)).chat_analysis).toMatchObject({
      name: 'Jane Doe',
      phone: '+14155550123',
      email: 'jane@example.com',
      answers: { full_name: 'Jane Doe', phone: '+14155550123', email: 'jane@example.com' },
    });
  });

  it("uses the agent's own questions and fills {{variables}} in its begin message", async () => {
    const custom = await createAgent(client, slug, {
      begin_message: 'Hello {{first_name}}, thanks for writing.',
      intake_questions: [
        { key: 'callback_phone', question: 'Which number should we call you back on?' },
        { key: 'incident_date', question: 'When did it happen?' },
      ],
    });
    const created = await createChat(client, slug, custom.agent_id, {
      first_name: 'Ann',
      vip: true,
      visits: 3,
    });
    expect(created.message).toBe('Hello Ann, thanks for writing. Which number should we call you back on?');
    expect(await say(client, created.chat_id, 'Use 415 555 0100')).toBe('Thank you. When did it happen?');
    expect(await say(client, created.chat_id, 'Last Tuesday')).toBe(
      [
        'Thank you. Here is a summary of what I collected:',
        '- Callback phone: +14155550100',
        '- Incident date: Last Tuesday',
        'A member of our team will review your information and contact you soon.',
      ].join('\n'),
    );
    const chat = await getChat(client, created.chat_id);
    expect(chat.dynamic_variables).toEqual({ first_name: 'Ann', vip: 'true', visits: '3' });
    expect((await client.post('/api/v2/end-chat', { chatId: created.chat_id })).status).toBe(200);
    expect((await getChat(client, created.chat_id)).chat_analysis).toMatchObject({
      name: 'Ann',
      phone: '+14155550100',
      answers: { callback_phone: '+14155550100', incident_date: 'Last Tuesday' },
      contact_collected: true,
    });
  });

  it('an agent changed after a chat opened keeps the chat on the questions it started with', async () => {
    const agent = await createAgent(client, slug, { begin_message: 'Hi.' });
    const { chat_id: chatId } = await createChat(client, slug, agent.agent_id);
    const patched = await client.patch(`/api/v2/update-agent/${agent.agent_id}`, {
      intake_questions: [{ key: 'email', question: 'Your email?' }],
    });
    expect(patched.status).toBe(200);
    expect(await say(client, chatId, 'Jane Doe')).toBe(`Thank you, Jane. ${PHONE_Q}`);
  });
});
