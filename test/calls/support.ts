import { expect } from 'vitest';
import type { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import type { Stack } from '../helpers/stack.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { CallDoc } from '../../core/domain/calls/calls.js';

export const INTAKE_QUESTIONS = [
  { key: 'full_name', question: 'May I have your full name?' },
  { key: 'phone', question: 'What number can we reach you on?' },
  { key: 'case_type', question: 'What kind of matter is this?' },
  { key: 'injury', question: 'Were you injured?' },
];

export async function createAgent(
  client: ApiClient,
  firmSlug: string,
  voiceId = 'sim-en-us-ava',
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await client.post('/api/v2/create-agent', {
    firmSlug,
    agent_name: 'Intake',
    voice_id: voiceId,
    begin_message: 'Hi, this is the intake line of the firm.',
    intake_questions: INTAKE_QUESTIONS,
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.agent_id as string;
}

/** Polls get-call until `check` passes (no fixed sleeps). */
export async function waitForCall(
  client: ApiClient,
  callId: string,
  check: (call: any) => boolean,
  timeoutMs = 20_000,
): Promise<any> {
  return eventually(
    async () => {
      const res = await client.get(`/api/v2/get-call/${callId}`);
      expect(res.status).toBe(200);
      expect(check(res.body), `call ${callId}: ${JSON.stringify(res.body)}`).toBe(true);
      return res.body;
    },
    timeoutMs,
    50,
  );
}

export const callsOf = (stack: Stack) => stack.services.mongo.db.collection<CallDoc>(COLLECTIONS.calls);

export const simulatorCallsOf = (stack: Stack) =>
  stack.services.mongo.db.collection(COLLECTIONS.simulatorCalls);
