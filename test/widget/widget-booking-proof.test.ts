// A widget chat books only after its visitor solved an ALTCHA proof of work. A token whose
// session opened while its key asked for none has solved nothing, so it offers no times and books
// nothing, also once the firm turns the key's challenge on: the token lives an hour, and tokens
// gathered before the switch would otherwise book without any proof of work.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAgent, INTAKE_ANSWERS } from '../chat/chat-helpers.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';

const SITE = 'https://firm.example';
const API_KEY = 'cal_live_widget_booking_proof_0123';
const EVENT_TYPE = 5152;
const DAY = 86_400_000;

let stack: Stack;
let cal: FakeCalcom | undefined;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
  await cal?.stop();
});

it('a token opened without a proof of work books nothing after the key turns ALTCHA on', async () => {
  cal = await startFakeCalcom({
    apiKey: API_KEY,
    eventTypeId: EVENT_TYPE,
    slots: dailySlots(Date.now() + DAY, 5, 12),
  });
  const firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
  });
  const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
  const key = await createWidgetKey(firm.client, firm.slug, { agent_id: agentId });
  // Opened while the key asks for no challenge: no proof of work.
  const session = await askSession(stack.api, SITE, { key: key.key });
  expect(session.status, JSON.stringify(session.body)).toBe(200);
  expect(session.body.settings.challenge).toBeNull();
  // The firm turns the challenge on (to let its widget book).
  const patched = await firm.client.patch(`/api/widget-keys/${key.id}`, { challenge: 'altcha' });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);

  const visitor = stack.api.withToken(session.body.token);
  const chat = await visitor.post('/api/v2/create-chat', { firmSlug: firm.slug, agentId }, { Origin: SITE });
  expect(chat.status, JSON.stringify(chat.body)).toBe(200);
  const say = async (message: string) => {
    const res = await visitor.post(
      '/api/v2/chat-completion',
      { chatId: chat.body.chat_id, message },
      { Origin: SITE },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.message as string;
  };
  let offer = '';
  for (const answer of INTAKE_ANSWERS) offer = await say(answer);
  const picked = await say('1');
  expect(cal.bookings).toEqual([]);
  expect(picked).not.toMatch(/^Your consultation is booked for /);
  expect(offer).not.toContain('Would you like a free consultation?');
}, 180_000);
