// What the fuzzer needs to exist before it starts, made through the API as a client would: a
// firm, a firm API key, an agent, a chat and two finished calls (for a real list-calls cursor).
import { FIRM } from './settings.js';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Fixtures {
  firmKey: string;
  agentId: string;
  voiceIds: string[];
  chatId: string;
  callIds: string[];
  /** A real next_cursor of list-calls for the firm. */
  cursor: string;
}

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as Record<string, unknown> & Array<Record<string, unknown>>;
}

export async function makeFixtures(base: string, adminKey: string): Promise<Fixtures> {
  await api(base, adminKey, 'POST', '/api/firms', { slug: FIRM, name: 'Fuzz Firm' });
  const key = await api(base, adminKey, 'POST', '/api/auth/api-keys', { firmSlug: FIRM, name: 'fuzz' });
  const firmKey = String(key.key);
  const voices = await api(base, firmKey, 'GET', '/api/v2/list-voices');
  const voiceIds = voices.map((v) => String(v.voice_id));
  const agent = await api(base, firmKey, 'POST', '/api/v2/create-agent', {
    firmSlug: FIRM,
    agent_name: 'Fuzz Agent',
    voice_id: voiceIds[0],
    intake_questions: [{ key: 'case_type', question: 'What happened?' }],
  });
  const agentId = String(agent.agent_id);
  const chat = await api(base, firmKey, 'POST', '/api/v2/create-chat', { firmSlug: FIRM, agentId });
  const callIds: string[] = [];
  for (const toNumber of ['+14155550123', '+14155550124']) {
    const call = await api(base, firmKey, 'POST', '/api/v2/create-outbound-call', {
      firmSlug: FIRM,
      agentId,
      toNumber,
    });
    callIds.push(String(call.call_id));
  }
  // The simulator finishes both calls in about SIM_CALL_MS; then a page of one has a next page.
  let cursor = '';
  const deadline = Date.now() + 60_000;
  while (cursor === '') {
    if (Date.now() > deadline) throw new Error('the fixture calls did not finish within 60 s');
    await sleep(250);
    const page = await api(base, firmKey, 'POST', '/api/v2/list-calls', { firmSlug: FIRM, limit: 1 });
    cursor = String(page.next_cursor);
  }
  return { firmKey, agentId, voiceIds, chatId: String(chat.chat_id), callIds, cursor };
}
