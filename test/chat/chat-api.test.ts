// The chat operations' rules over HTTP (real Redis and FerretDB): ended chats, firm isolation,
// validation with the error shape (docs/errors.md), and concurrent messages on one chat.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intakeReply } from '../../core/domain/intake/intake-agent.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import type { ApiClient } from '../helpers/client.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createAgent, createChat, getChat, say } from './chat-helpers.js';

let stack: Stack;
let a: { slug: string; client: ApiClient; agentId: string };
let b: { slug: string; client: ApiClient; agentId: string };

beforeAll(async () => {
  stack = await startStack();
  const firmA = await createFirm(stack);
  const firmB = await createFirm(stack);
  a = { ...firmA, agentId: (await createAgent(firmA.client, firmA.slug)).agent_id };
  b = { ...firmB, agentId: (await createAgent(firmB.client, firmB.slug)).agent_id };
});
afterAll(async () => stack?.stop());

describe('an ended chat', () => {
  it('answers 409 chat_not_active to chat-completion and end-chat, and nothing is appended', async () => {
    const { chat_id: chatId } = await createChat(a.client, a.slug, a.agentId);
    await say(a.client, chatId, 'Jane Doe');
    expect((await a.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const ended = await getChat(a.client, chatId);
    expect(ended.messages).toHaveLength(3);

    expectError(
      await a.client.post('/api/v2/chat-completion', { chatId, message: 'Are you still there?' }),
      409,
      'chat_not_active',
    );
    expectError(await a.client.post('/api/v2/end-chat', { chatId }), 409, 'chat_not_active');

    const after = await getChat(a.client, chatId);
    expect(after.messages).toEqual(ended.messages);
    expect(after.chat_analysis).toEqual(ended.chat_analysis);
    expect(after.ended_at).toBe(ended.ended_at);
  });
});

describe('firm isolation', () => {
  it("treats another firm's chat, and an unknown chat, as not found on every chat operation", async () => {
    const { chat_id: chatId } = await createChat(a.client, a.slug, a.agentId);
    const before = await getChat(a.client, chatId);

    for (const id of [chatId, 'chat_doesnotexist', `${chatId}x`]) {
      const client = id === chatId ? b.client : a.client;
      expectError(await client.get(`/api/v2/get-chat/${id}`), 404, 'chat_not_found');
      expectError(
        await client.post('/api/v2/chat-completion', { chatId: id, message: 'hello' }),
        404,
        'chat_not_found',
      );
      expectError(await client.post('/api/v2/end-chat', { chatId: id }), 404, 'chat_not_found');
    }
    // Firm B's attempts changed nothing: the chat is still open with its greeting only.
    expect(await getChat(a.client, chatId)).toEqual(before);
    // The platform key may read any firm's chat.
    expect((await stack.admin.get(`/api/v2/get-chat/${chatId}`)).body.chat_id).toBe(chatId);
  });

  it("refuses a firm token creating a chat for another firm (403) or with another firm's agent (404)", async () => {
    expectError(
      await a.client.post('/api/v2/create-chat', { agentId: b.agentId, firmSlug: b.slug }),
      403,
      'forbidden',
    );
    expectError(
      await a.client.post('/api/v2/create-chat', { agentId: b.agentId, firmSlug: a.slug }),
      404,
      'agent_not_found',
    );
    expectError(
      await stack.admin.post('/api/v2/create-chat', { agentId: a.agentId, firmSlug: 'no-such-firm' }),
      404,
      'firm_not_found',
    );
    // The platform key may open a chat for any firm.
    const res = await stack.admin.post('/api/v2/create-chat', { agentId: b.agentId, firmSlug: b.slug });
    expect(res.status).toBe(200);
    expect((await getChat(b.client, res.body.chat_id)).firm).toBe(b.slug);
  });

  it('needs a bearer token', async () => {
    const res = await stack.api.post('/api/v2/chat-completion', { chatId: 'chat_x', message: 'hi' });
    expectError(res, 401, 'unauthorized');
  });
});

describe('validation', () => {
  let chatId: string;
  beforeAll(async () => {
    chatId = (await createChat(a.client, a.slug, a.agentId)).chat_id;
  });

  const completion = (body: unknown) => a.client.post('/api/v2/chat-completion', body);

  it.each([
    ['an empty message', () => ({ chatId, message: '' }), ['/message']],
    ['a message of 4001 characters', () => ({ chatId, message: 'x'.repeat(4001) }), ['/message']],
    ['a message of white space only', () => ({ chatId, message: '  \n ' }), ['/message']],
    ['a missing message', () => ({ chatId }), ['/message']],
    ['an unknown field', () => ({ chatId, message: 'hi', chat_id: chatId }), ['/chat_id']],
    ['wrong types', () => ({ chatId: 123, message: ['hi'] }), ['/chatId', '/message']],
    ['an operator for the chat id', () => ({ chatId: { $ne: null }, message: 'hi' }), ['/chatId']],
    ['a message holding the NUL character', () => ({ chatId, message: 'Jane\u0000Doe' }), ['/message']],
  ])('rejects %s on chat-completion', async (_what, body, paths) => {
    const before = (await getChat(a.client, chatId)).messages.length;
    const res = await completion(body());
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res).sort()).toEqual([...paths].sort());
    expect((await getChat(a.client, chatId)).messages).toHaveLength(before);
  });

  it('accepts a message of exactly 4000 characters', async () => {
    const message = `My name is Jane Doe. ${'x'.repeat(3979)}`;
    expect(message).toHaveLength(4000);
    const res = await completion({ chatId, message });
    expect(res.status).toBe(200);
    const stored = (await getChat(a.client, chatId)).messages;
    expect(stored[stored.length - 2]).toMatchObject({ role: 'user', content: message });
  });

  it('rejects bad end-chat and create-chat bodies', async () => {
    let res = await a.client.post('/api/v2/end-chat', { chatId: { $ne: null } });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(['/chatId']);

    res = await a.client.post('/api/v2/end-chat', { chatId, reason: 'done' });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(['/reason']);
    expect((await getChat(a.client, chatId)).status).toBe('ongoing');

    res = await a.client.post('/api/v2/create-chat', { firmSlug: a.slug });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(['/agentId']);

    res = await a.client.post('/api/v2/create-chat', { agentId: a.agentId, firmSlug: { $gt: '' } });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(['/firmSlug']);

    res = await a.client.post('/api/v2/create-chat', {
      agentId: a.agentId,
      firmSlug: a.slug,
      dynamicVariables: { ok_name: 'x', 'bad-key': 'y', nested: { a: 1 } },
    });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res).sort()).toEqual(['/dynamicVariables/bad-key', '/dynamicVariables/nested']);

    const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_v, i) => [`v${i}`, i]));
    res = await a.client.post('/api/v2/create-chat', {
      agentId: a.agentId,
      firmSlug: a.slug,
      dynamicVariables: tooMany,
    });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(['/dynamicVariables']);

    const fifty = Object.fromEntries(
      Array.from({ length: 50 }, (_v, i) => [`v${i}`, i % 2 === 0 ? i : i % 3 === 0]),
    );
    res = await a.client.post('/api/v2/create-chat', {
      agentId: a.agentId,
      firmSlug: a.slug,
      dynamicVariables: fifty,
    });
    expect(res.status).toBe(200);
    const stored = (await getChat(a.client, res.body.chat_id)).dynamic_variables;
    expect(stored).toEqual(Object.fromEntries(Object.entries(fifty).map(([k, v]) => [k, String(v)])));
  });

  it('rejects a body that is not JSON', async () => {
    const res = await a.client.request('POST', '/api/v2/chat-completion', {
      rawBody: '{"chatId": ',
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(res, 400, 'invalid_request');
    expect(res.body.error.message).toBe('The request body is not valid JSON.');
  });

  it('rejects a JSON body that is not an object, saying so', async () => {
    for (const rawBody of ['"hello"', 'null', '42']) {
      const res = await a.client.request('POST', '/api/v2/chat-completion', {
        rawBody,
        headers: { 'Content-Type': 'application/json' },
      });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message, rawBody).toBe('The request body must be a JSON object.');
    }
  });
});

describe('concurrent messages on one chat', () => {
  it('keeps every message, each reply right after its own message and computed on the history before it', async () => {
    const agent = await createAgent(a.client, a.slug, { begin_message: 'Hello.' });
    const questions = agent.intake_questions;
    const { chat_id: chatId } = await createChat(a.client, a.slug, agent.agent_id);
    const messages = Array.from({ length: 10 }, (_v, i) => `message ${i}: call 415 555 01${10 + i}`);

    const responses = await Promise.all(
      messages.map((message) => a.client.post('/api/v2/chat-completion', { chatId, message })),
    );
    for (const res of responses) expect(res.status, JSON.stringify(res.body)).toBe(200);

    const stored = (await getChat(a.client, chatId)).messages as Array<{ role: string; content: string }>;
    expect(stored).toHaveLength(1 + 2 * messages.length);
    const users = stored.filter((m) => m.role === 'user').map((m) => m.content);
    expect([...users].sort()).toEqual([...messages].sort());
    // Strictly alternating, each reply right after the message it answers.
    stored.forEach((m, i) => expect(m.role).toBe(i % 2 === 0 ? 'agent' : 'user'));
    for (let i = 1; i < stored.length; i += 2) {
      const previous = stored
        .slice(0, i)
        .filter((m) => m.role === 'user')
        .map((m) => m.content);
      expect(stored[i + 1]!.content).toBe(intakeReply(questions, previous, stored[i]!.content));
      // And the response to that request carried that same reply.
      const response = responses[messages.indexOf(stored[i]!.content)]!;
      expect(response.body.message).toBe(stored[i + 1]!.content);
    }
  });

  it('lets a concurrent end-chat and messages settle: every 200 message is stored, nothing after the end', async () => {
    const { chat_id: chatId } = await createChat(a.client, a.slug, a.agentId);
    const sends = Array.from({ length: 6 }, (_v, i) =>
      a.client.post('/api/v2/chat-completion', { chatId, message: `note ${i}` }),
    );
    const end = a.client.post('/api/v2/end-chat', { chatId });
    const [endRes, ...sendRes] = await Promise.all([end, ...sends]);
    expect(endRes!.status).toBe(200);
    const chat = await getChat(a.client, chatId);
    expect(chat.status).toBe('ended');
    const stored = chat.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
    sendRes.forEach((res, i) => {
      if (res.status === 200) expect(stored).toContain(`note ${i}`);
      else {
        expectError(res, 409, 'chat_not_active');
        expect(stored).not.toContain(`note ${i}`);
      }
    });
    // The analysis covers exactly the messages before the end.
    expect(chat.messages).toHaveLength(1 + 2 * stored.length);
  });
});

describe('the exchange log', () => {
  it('brings a chat up to date with a change whose writer stopped before updating the chat', async () => {
    const db = stack.services.mongo.db;
    const { chat_id: chatId } = await createChat(a.client, a.slug, a.agentId);
    await say(a.client, chatId, 'Jane Doe');
    expect(await db.collection('chats').findOne({ _id: chatId as any })).toMatchObject({ version: 1 });
    expect(await db.collection('chat_turns').countDocuments({ chat_id: chatId })).toBe(1);

    // A request claimed version 2 in the log, then died before writing the chat document.
    const at = new Date();
    await db.collection('chat_turns').insertOne({
      _id: `${chatId}:2` as any,
      chat_id: chatId,
      firm: a.slug,
      version: 2,
      kind: 'exchange',
      append: [
        { role: 'user', content: '415 555 0123', created_at: at },
        { role: 'agent', content: 'Thank you. What is your email address?', created_at: at },
      ],
      end: null,
      created_at: at,
    });

    // Readers see it; the next message is answered on top of it and takes version 3.
    const chat = await getChat(a.client, chatId);
    expect(chat.messages.map((m: any) => m.content).slice(-2)).toEqual([
      '415 555 0123',
      'Thank you. What is your email address?',
    ]);
    expect(await say(a.client, chatId, 'jane@example.com')).toBe(
      'Thank you. What kind of legal matter is this about?',
    );
    expect(await db.collection('chats').findOne({ _id: chatId as any })).toMatchObject({ version: 3 });
    expect((await getChat(a.client, chatId)).messages).toHaveLength(7);
  });
});
