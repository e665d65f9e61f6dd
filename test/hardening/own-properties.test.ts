// Found by the API fuzzer (npm run fuzz): an intake question keyed "constructor" crashed the
// simulator's job on every attempt (vars["constructor"] is Object, which has no .trim), and the
// call stayed registered. Answers and variables are read by own property only, so keys named
// like Object.prototype members are ordinary keys: in the analysis, the simulator, the chat.
// The pure functions are tested in test/unit/own-properties.test.ts; here, the same over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { waitForCall } from '../calls/support.js';
import { createAgent, createChat, getChat, say } from '../chat/chat-helpers.js';

/** Keys an agent may have (^[a-z][a-z0-9_]{0,63}$) that are, or look like, Object.prototype names. */
const API_KEYS = ['constructor', 'valueof', 'tostring', 'hasownproperty'];

describe('agents with prototype-named intake questions', () => {
  let stack: Stack;
  let firm: Awaited<ReturnType<typeof createFirm>>;
  let agentId: string;

  beforeAll(async () => {
    stack = await startStack({ workers: true, env: { SIM_CALL_MS: '200' } });
    firm = await createFirm(stack);
    agentId = (
      await createAgent(firm.client, firm.slug, {
        begin_message: 'Hello {{constructor}} {{valueOf}}.',
        intake_questions: [
          { key: 'full_name', question: 'May I have your full name?' },
          { key: 'constructor', question: 'Who referred you to us?' },
          { key: 'valueof', question: 'What is the claim worth to you?' },
          { key: 'tostring', question: 'Anything to add?' },
          { key: 'hasownproperty', question: 'Do you own the property?' },
          { key: 'phone', question: 'What number can we reach you on?' },
        ],
      })
    ).agent_id;
  });
  afterAll(async () => stack?.stop());

  it('a simulated call goes registered → ended with an analysis', async () => {
    for (const dynamicVariables of [
      { full_name: 'Maria Lopez' },
      {
        full_name: 'Maria Lopez',
        constructor: 'A friend',
        valueof: 'a lot',
        toString: 'x',
        valueOf: 'y',
      },
    ]) {
      const created = await firm.client.post('/api/v2/create-outbound-call', {
        toNumber: '+14155550123',
        agentId,
        firmSlug: firm.slug,
        dynamicVariables,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const ended = await waitForCall(
        firm.client,
        created.body.call_id,
        (c) => c.status === 'ended' && c.call_analysis !== null,
      );
      const data = ended.call_analysis.custom_analysis_data;
      expect(data.full_name).toBe('Maria Lopez');
      expect(data.phone).toBe('+14155550123');
      const vars = dynamicVariables as Record<string, string>;
      for (const key of API_KEYS) {
        const given = Object.hasOwn(vars, key) ? vars[key] : undefined;
        expect(data[key], key).toBe(given ?? "I'd rather go over that with the attorney directly.");
      }
      expect(ended.transcript).toContain('Agent: Who referred you to us?\nUser: ');
    }
  });

  it('a chat with the built-in intake agent asks them, answers are kept, and end-chat analyses it', async () => {
    const created = await createChat(firm.client, firm.slug, agentId);
    // Unknown placeholders stay as written: Object.prototype names are not variables.
    expect(created.message).toBe('Hello {{constructor}} {{valueOf}}. May I have your full name?');
    expect(await say(firm.client, created.chat_id, 'Jane Doe')).toBe(
      'Thank you, Jane. Who referred you to us?',
    );
    expect(await say(firm.client, created.chat_id, 'A friend')).toBe(
      'Thank you. What is the claim worth to you?',
    );
    expect(await say(firm.client, created.chat_id, 'A lot')).toBe('Thank you. Anything to add?');
    expect(await say(firm.client, created.chat_id, 'No')).toBe('Thank you. Do you own the property?');
    expect(await say(firm.client, created.chat_id, 'Yes')).toBe(
      'Thank you. What number can we reach you on?',
    );
    const summary = await say(firm.client, created.chat_id, '(415) 555-0123');
    expect(summary).toContain('- Constructor: A friend');
    expect((await firm.client.post('/api/v2/end-chat', { chatId: created.chat_id })).status).toBe(200);
    const chat = await getChat(firm.client, created.chat_id);
    expect(chat.chat_analysis.answers).toEqual({
      full_name: 'Jane Doe',
      constructor: 'A friend',
      valueof: 'A lot',
      tostring: 'No',
      hasownproperty: 'Yes',
      phone: '+14155550123',
    });
  });

  it('a chat ended before those questions are answered has no answers for them', async () => {
    const created = await createChat(firm.client, firm.slug, agentId, {
      constructor: 'Ada',
      valueOf: 'v',
    });
    expect(created.message).toBe('Hello Ada v. May I have your full name?');
    await say(firm.client, created.chat_id, 'Jane Doe');
    expect((await firm.client.post('/api/v2/end-chat', { chatId: created.chat_id })).status).toBe(200);
    const chat = await getChat(firm.client, created.chat_id);
    expect(chat.chat_analysis.answers).toEqual({ full_name: 'Jane Doe' });
    expect(chat.chat_analysis.name).toBe('Jane Doe');
  });
});
