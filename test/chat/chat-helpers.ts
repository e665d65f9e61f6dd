// Shared steps of the chat suites: an agent for a firm, a chat with it, and reading it back.
import { expect } from 'vitest';
import type { ApiClient } from '../helpers/client.js';

export const VOICE_ID = 'sim-en-us-ava';

export async function createAgent(
  client: ApiClient,
  firmSlug: string,
  fields: Record<string, unknown> = {},
): Promise<{ agent_id: string; intake_questions: Array<{ key: string; question: string }> }> {
  const res = await client.post('/api/v2/create-agent', {
    firmSlug,
    agent_name: 'Intake Ava',
    voice_id: VOICE_ID,
    ...fields,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

export async function createChat(
  client: ApiClient,
  firmSlug: string,
  agentId: string,
  dynamicVariables?: Record<string, unknown>,
): Promise<{ chat_id: string; agent_id: string; status: string; message?: string }> {
  const res = await client.post('/api/v2/create-chat', {
    agentId,
    firmSlug,
    ...(dynamicVariables === undefined ? {} : { dynamicVariables }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Sends a message and returns the agent's reply (expects 200). */
export async function say(client: ApiClient, chatId: string, message: string): Promise<string> {
  const res = await client.post('/api/v2/chat-completion', { chatId, message });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(Object.keys(res.body)).toEqual(['message']);
  expect(typeof res.body.message).toBe('string');
  return res.body.message as string;
}

export async function getChat(client: ApiClient, chatId: string): Promise<any> {
  const res = await client.get(`/api/v2/get-chat/${chatId}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** What a person answers the built-in intake agent's questions, in order, up to its offer of times. */
export const INTAKE_ANSWERS = [
  'Jane Doe',
  '+1 415 555 0134',
  'jane.doe@example.com',
  'car accident',
  'I was rear-ended.',
];
