// The LLM chat engine (OPENAI_API_KEY set) against a local fake of the OpenAI API: the request
// the SDK sends, the reply returned and stored, one retry on 429/5xx, and the error mapping.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-server.js';
import { createAgent, createChat, getChat, say } from './chat-helpers.js';

let fake: FakeOpenAi;
let stack: Stack;
let client: ApiClient;
let slug: string;
let agentId: string;

beforeAll(async () => {
  fake = await startFakeOpenAi('sk-test');
  stack = await startStack({
    env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.url, OPENAI_MODEL: 'gpt-test-mini' },
  });
  const firm = await createFirm(stack);
  client = firm.client;
  slug = firm.slug;
  agentId = (
    await createAgent(client, slug, {
      prompt: 'You are Ava of Doe & Partners. {{first_name}} is a returning client.',
      begin_message: 'Hi {{first_name}}! How can we help?',
      intake_questions: [
        { key: 'full_name', question: 'What is your full name?' },
        { key: 'email', question: 'What is your email address?' },
      ],
    })
  ).agent_id;
});
afterAll(async () => {
  await stack?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe('the LLM chat engine', () => {
  it('sends the model, a system prompt from the agent, and the stored history; returns and stores the reply', async () => {
    const created = await createChat(client, slug, agentId, { first_name: 'Ann', case_ref: 42 });
    // Opening a chat greets with the begin message and costs no model call.
    expect(created.message).toBe('Hi Ann! How can we help?');
    expect(fake.requests).toHaveLength(0);

    expect(await say(client, created.chat_id, 'I was in a crash.')).toBe('LLM reply to: I was in a crash.');
    expect(fake.requests).toHaveLength(1);
    const first = fake.requests[0]!;
    expect(first.path).toBe('/v1/chat/completions');
    expect(first.authorization).toBe('Bearer sk-test');
    expect(first.body.model).toBe('gpt-test-mini');
    const [system, ...conversation] = first.body.messages as Array<{ role: string; content: string }>;
    expect(system!.role).toBe('system');
    expect(system!.content).toContain('You are Ava of Doe & Partners. Ann is a returning client.');
    expect(system!.content).toContain('1. What is your full name? (full_name)');
    expect(system!.content).toContain('2. What is your email address? (email)');
    expect(system!.content).toContain('- first_name: Ann');
    expect(system!.content).toContain('- case_ref: 42');
    expect(conversation).toEqual([
      { role: 'assistant', content: 'Hi Ann! How can we help?' },
      { role: 'user', content: 'I was in a crash.' },
    ]);

    fake.respond = () => 'Thanks Ann. What is your email address?';
    expect(await say(client, created.chat_id, 'My name is Ann Lee')).toBe(
      'Thanks Ann. What is your email address?',
    );
    expect(fake.requests[1]!.body.messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Hi Ann! How can we help?' },
      { role: 'user', content: 'I was in a crash.' },
      { role: 'assistant', content: 'LLM reply to: I was in a crash.' },
      { role: 'user', content: 'My name is Ann Lee' },
    ]);

    const chat = await getChat(client, created.chat_id);
    expect(chat.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['agent', 'Hi Ann! How can we help?'],
      ['user', 'I was in a crash.'],
      ['agent', 'LLM reply to: I was in a crash.'],
      ['user', 'My name is Ann Lee'],
      ['agent', 'Thanks Ann. What is your email address?'],
    ]);

    // The same analysis runs on an LLM chat (its questions are its own wording: patterns read it).
    fake.respond = () => 'Thank you, we will be in touch.';
    await say(client, created.chat_id, 'ann.lee@example.com');
    expect((await client.post('/api/v2/end-chat', { chatId: created.chat_id })).status).toBe(200);
    expect((await getChat(client, created.chat_id)).chat_analysis).toMatchObject({
      name: 'Ann Lee',
      email: 'ann.lee@example.com',
      case_type: 'Personal Injury',
      answers: { full_name: 'Ann Lee', email: 'ann.lee@example.com' },
      contact_collected: true,
    });
  });

  it('retries once after a 429 and answers with the reply', async () => {
    const { chat_id: chatId } = await createChat(client, slug, agentId);
    fake.failNext.push(429);
    expect(await say(client, chatId, 'hello?')).toBe('LLM reply to: hello?');
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.body).toEqual(fake.requests[0]!.body);
    const stored = (await getChat(client, chatId)).messages;
    expect(stored.filter((m: any) => m.role === 'user')).toHaveLength(1);
  });

  it('retries once after a 500, then answers 503 unavailable with Retry-After and stores nothing', async () => {
    const { chat_id: chatId } = await createChat(client, slug, agentId);
    const before = (await getChat(client, chatId)).messages;
    fake.failAlways = 500;
    const res = await client.post('/api/v2/chat-completion', { chatId, message: 'anyone there?' });
    expectError(res, 503, 'unavailable');
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(res.text).not.toContain('server had an error');
    expect(fake.requests).toHaveLength(2);
    expect((await getChat(client, chatId)).messages).toEqual(before);

    // Once the model is back the same message goes through.
    fake.failAlways = null;
    expect(await say(client, chatId, 'anyone there?')).toBe('LLM reply to: anyone there?');
  });

  it('answers 502 chat_engine_error, without retrying, when the model rejects the key', async () => {
    const { chat_id: chatId } = await createChat(client, slug, agentId);
    fake.apiKey = 'sk-rotated';
    const res = await client.post('/api/v2/chat-completion', { chatId, message: 'hello' });
    expectError(res, 502, 'chat_engine_error');
    expect(res.text).not.toContain('sk-test');
    expect(fake.requests).toHaveLength(1);
    expect((await getChat(client, chatId)).messages).toHaveLength(1);
  });

  it('answers 502 chat_engine_error for an empty completion and stores nothing', async () => {
    const { chat_id: chatId } = await createChat(client, slug, agentId);
    fake.respond = () => '   ';
    expectError(
      await client.post('/api/v2/chat-completion', { chatId, message: 'hello' }),
      502,
      'chat_engine_error',
    );
    expect((await getChat(client, chatId)).messages).toHaveLength(1);
  });
});
