// The fake OpenAI refuses what OpenAI's chat completions refuse, with its 400
// invalid_request_error naming the parameter, and takes what the product's clients send
// (the chat engine's conversation, the extractor's strict json_schema).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLER_DATA_SCHEMA } from '../../core/integrations/chat/openai-extractor.js';
import { startFakeOpenAi, type FakeOpenAi } from './openai-server.js';

let openai: FakeOpenAi;
beforeAll(async () => {
  openai = await startFakeOpenAi();
});
afterAll(async () => {
  await openai?.close();
});

async function complete(body: unknown): Promise<[number, any]> {
  const res = await fetch(`${openai.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${openai.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return [res.status, await res.json()];
}

const ok = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are an intake assistant.' },
    { role: 'assistant', content: 'Hello, how can I help?' },
    { role: 'user', content: 'I was in a car accident.' },
  ],
};
const structured = (schema: unknown, name = 'caller_data') => ({
  ...ok,
  temperature: 0,
  response_format: { type: 'json_schema', json_schema: { name, strict: true, schema } },
});

describe('the fake OpenAI chat completions', () => {
  it("takes a conversation and the extractor's strict schema", async () => {
    expect((await complete(ok))[0]).toBe(200);
    const [status, body] = await complete(structured(CALLER_DATA_SCHEMA));
    expect(status).toBe(200);
    expect(Object.keys(JSON.parse(body.choices[0].message.content)).sort()).toEqual(
      [...CALLER_DATA_SCHEMA.required].sort(),
    );
  });

  it('refuses what OpenAI refuses, naming the parameter', async () => {
    const open = {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
    };
    const nestedOpen = {
      type: 'object',
      additionalProperties: false,
      required: ['inner'],
      properties: { inner: { type: 'object', properties: { b: { type: 'string' } }, required: [] } },
    };
    const cases: Array<[unknown, string | null]> = [
      [{ ...ok, temprature: 0 }, null],
      [{ messages: ok.messages }, 'model'],
      [{ model: 'gpt-4o-mini' }, 'messages'],
      [{ ...ok, messages: [] }, 'messages'],
      [{ ...ok, messages: [{ role: 'agent', content: 'hi' }] }, 'messages[0].role'],
      [{ ...ok, messages: [{ role: 'user' }] }, 'messages[0].content'],
      [{ ...ok, messages: [{ role: 'user', content: 42 }] }, 'messages[0].content'],
      [{ ...ok, temperature: 3 }, 'temperature'],
      [{ ...ok, response_format: { type: 'xml' } }, 'response_format.type'],
      [structured(CALLER_DATA_SCHEMA, 'caller data'), 'response_format.json_schema.name'],
      [structured(open), 'response_format'],
      [structured(nestedOpen), 'response_format'],
    ];
    for (const [body, param] of cases) {
      const [status, answer] = await complete(body);
      expect([status, answer.error?.type, answer.error?.param], JSON.stringify(body)).toEqual([
        400,
        'invalid_request_error',
        param,
      ]);
    }
  });
});
